"""The ASGI app: access checks, the three generation endpoints, `count_tokens`, `GET /v1/models`,
and (when asked for) the access log around all of it.

Every request passes `_LastResort` (any unexpected exception becomes a 500 in the API's
shape with a short id, also in the server's one log line: never a plain-text 500 or a
traceback), then `_Guard`: any `Origin` header or a `Host` that is not the bound
loopback address is refused (403: a web page cannot drive the endpoint), then the key is
checked in constant time (`x-api-key` or `Authorization: Bearer`; a request sending both
must send the key in both). A generation request takes one of the `max_concurrent` slots
first (429 with `retry-after` when none is free), only then reads its body (at most 32 MiB,
`hostlink.serve.body`), parses it in its wire format and runs one fresh provider request
with the whole conversation. While it runs, the client connection is watched: a client that
goes away cancels the request's signal, which stops its `claude`.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from contextlib import aclosing
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

import hostlink.serve.anthropic as anthropic
import hostlink.serve.openai as openai
from hostlink.claude_code import PlanGuard, usage_as_json
from hostlink.host import CancelSignal, Done, ErrorEvent
from hostlink.host.session import HostSession
from hostlink.serve import access_log, tokens
from hostlink.serve.body import ClientGone, read_json
from hostlink.serve.core import PROVIDER, ApiError, model_alias, provider_error, provider_spec
from hostlink.serve.metrics import CountRequests, ServeMetrics, metrics_route
from hostlink.serve.response_store import ResponseStore
from hostlink.serve.responses_stream import ResponsesWire
from hostlink.serve.status import Recent, StatusPage
from hostlink.serve.tracing import TraceRequests
from hostlink.serve.usage import PlanHeaders, usage_route, with_reset

DEFAULT_MAX_CONCURRENT = 4
_STOPPING = ApiError(529, "overloaded", "the server is stopping")
Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class ServeState:
    """What the app shares across requests: the session, the key, the running requests."""

    def __init__(self, host: HostSession, token: str, max_concurrent: int,
                 allowed_hosts: frozenset[str] | None, *, bearer_only: bool = False) -> None:
        if not token:
            raise ValueError("the endpoint needs a non-empty token")
        if max_concurrent < 1:
            raise ValueError("max_concurrent must be at least 1")
        self.host = host
        self._token = token.encode()
        self.max_concurrent = max_concurrent
        self.allowed_hosts = allowed_hosts
        self.bearer_only = bearer_only  # the key only as `Authorization: Bearer` (MCP's header), not `x-api-key`
        self.running: set[CancelSignal] = set()
        self.stopping = False
        self.responses = ResponsesWire(ResponseStore())

    def stop_all(self, reason: str = "the server is stopping") -> None:
        """Refuse new requests and cancel every running one (each stops its `claude`)."""
        self.stopping = True
        for signal in list(self.running):
            signal.cancel(reason)

    def check(self, scope: Scope, *, key: bool = True, own_origin: bool = False) -> None:
        """Refuse (`ApiError`) an `Origin` header, a `Host` that is not this server's, and a
        missing or wrong key. `own_origin`: an `Origin` naming this very server passes (what a
        browser sends with the status page's own sign-in form)."""
        headers = {key.decode("latin-1").lower(): value for key, value in scope.get("headers", ())}
        host = headers.get("host", b"").decode("latin-1").lower()
        if "origin" in headers and not (own_origin and host in self._hosts(scope)
                                        and headers["origin"].decode("latin-1").lower() == f"http://{host}"):
            raise ApiError(403, "permission", "requests from web pages (with an Origin header) are refused")
        if host not in self._hosts(scope):
            raise ApiError(403, "permission", "the Host header is not this server's loopback address")
        if not key:
            return
        if not self._key_valid(headers):
            raise ApiError(401, "authentication", "a valid API key is required (Authorization: Bearer)"
                           if self.bearer_only else "a valid API key is required (x-api-key or Authorization: "
                                                    "Bearer; when both are sent, both must carry it)")

    def _key_valid(self, headers: dict[str, bytes]) -> bool:
        """Every non-empty key header must carry the key, and at least one must be sent."""
        sent = [b"" if self.bearer_only else headers.get("x-api-key", b"").strip()]
        bearer = headers.get("authorization", b"").strip()
        sent.append(bearer[7:].strip() if bearer[:7].lower() == b"bearer " else b"")  # other schemes: no key
        keys = [key for key in sent if key]
        valid = [hmac.compare_digest(key, self._token) for key in keys]  # every one compared, in constant time
        return bool(keys) and all(valid)

    def _hosts(self, scope: Scope) -> frozenset[str]:
        if self.allowed_hosts is not None:
            return self.allowed_hosts
        server = scope.get("server")
        if not server or server[1] is None:
            return frozenset()
        address, port = server
        try:
            if not ipaddress.ip_address(address).is_loopback:
                return frozenset()
        except ValueError:
            return frozenset()
        shown = f"[{address}]" if ":" in address else address
        return frozenset({f"{shown}:{port}", f"localhost:{port}"})


def _wire(scope: Scope) -> Any:
    """Which API's error shape a request gets: by path, then by the Anthropic SDK's header."""
    path = scope.get("path", "")
    if path.startswith("/v1/messages"):
        return anthropic
    if path.startswith(("/v1/chat/", "/v1/responses")):
        return openai
    headers = dict(scope.get("headers", ()))
    return anthropic if b"anthropic-version" in headers else openai


async def _send_json(send: Send, status: int, body: Any, headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
    data = json.dumps(body, ensure_ascii=False).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
                            (b"cache-control", b"no-store"), *headers]})
    await send({"type": "http.response.body", "body": data})


async def _send_error(send: Send, wire: Any, error: ApiError) -> None:
    headers = [(b"retry-after", str(error.retry_after).encode())] if error.retry_after is not None else []
    await _send_json(send, error.status, with_reset(wire.error_body(error), error.resets_at), headers)


_log = logging.getLogger("uvicorn.error")


class _LastResort:
    """Outermost: `cache-control: no-store` on every answer, and no exception escapes.

    An unexpected exception is answered (when nothing was sent yet) as a 500 in the API's own
    shape carrying a short id; the server's log gets one line with the same id, the exception's
    type and where it was raised, never its text (it could quote the request) or a traceback.
    """

    def __init__(self, app: Callable[..., Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_no_store(message: MutableMapping[str, Any]) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = [(k, v) for k, v in message.get("headers", ()) if k.lower() != b"cache-control"]
                message["headers"] = [*headers, (b"cache-control", b"no-store")]
            await send(message)

        try:
            await self.app(scope, receive, send_no_store)
        except Exception as error:  # noqa: BLE001 - the last resort: a bug is still an answer in the API's shape
            incident = secrets.token_hex(4)
            _log.error("internal error %s: %s at %s on %s %s", incident, *_origin(error), scope.get("method"),
                       str(scope.get("path"))[:80], extra={"every_time": True})
            if not started:
                await _send_error(send, _wire(scope), ApiError(
                    500, "api", f"internal error {incident} (the server's log has this id)"))


def _origin(error: BaseException) -> tuple[str, str]:
    """The innermost exception's type and the file:line that raised it (of a group: its first)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    frame = error.__traceback__
    while frame is not None and frame.tb_next is not None:
        frame = frame.tb_next
    where = f"{frame.tb_frame.f_code.co_filename.rsplit('/', 1)[-1]}:{frame.tb_lineno}" if frame else "?"
    return type(error).__name__, where


class _Guard:
    """Host/Origin and key checks in front of every route, answered in the API's own shape.

    `HEAD /api/hello` (Claude Code's connectivity probe, sent without the key) is answered
    here with an empty 200 once Host and Origin pass; it reveals nothing."""

    def __init__(self, app: Callable[..., Awaitable[None]], state: ServeState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("path") == "/api/hello" and scope.get("method") in ("HEAD", "GET"):
            try:
                self.state.check(scope, key=False)
            except ApiError as error:
                await _send_error(send, _wire(scope), error)
                return
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return
        if scope["type"] == "http":
            try:
                self.state.check(scope)
            except ApiError as error:
                await _send_error(send, _wire(scope), error)
                return
        await self.app(scope, receive, send)


class _Generate:
    """`POST /v1/messages`, `/v1/chat/completions` or `/v1/responses` (`wire` decides which)."""

    def __init__(self, state: ServeState, wire: Any) -> None:
        self.state = state
        self.wire = wire

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        state, wire = self.state, self.wire
        try:
            if state.stopping:
                raise _STOPPING
            provider = provider_spec(state.host.registry.providers)
            if len(state.running) >= state.max_concurrent:
                raise ApiError(429, "rate_limit", f"more than {state.max_concurrent} requests at once; retry shortly",
                               retry_after=1)
        except ApiError as error:
            await _send_error(send, wire, error)
            return
        signal = CancelSignal()
        state.running.add(signal)  # the slot is taken before the body is read: bodies in memory <= slots
        try:
            try:
                parsed = wire.parse(await read_json(scope, receive), provider)
                access_log.facts(scope)["model"] = parsed.model_name
            except ClientGone:
                return
            except ApiError as error:
                await _send_error(send, wire, error)
                return
            async with anyio.create_task_group() as group:
                group.start_soon(_watch, receive, signal)
                await self._answer(parsed, send, signal, access_log.facts(scope))
                group.cancel_scope.cancel()
        finally:
            state.running.discard(signal)

    async def _answer(self, parsed: Any, send: Send, signal: CancelSignal, log: dict[str, Any]) -> None:
        """Read the provider stream to its end (so its cleanup always completes)."""
        wire = self.wire
        streamer = wire.Streamer(parsed) if parsed.stream else None
        started = False
        outcome: Done | ErrorEvent | None = None
        events = parsed.answer(self.state.host.stream(PROVIDER, parsed.model, parsed.context, signal))
        async with aclosing(events):
            async for event in events:
                if isinstance(event, (Done, ErrorEvent)):
                    outcome = event
                if not isinstance(event, ErrorEvent):  # the first token, call or end: time to first token
                    log.setdefault("first_token", time.monotonic())
                if isinstance(event, Done):
                    usage = event.message.usage
                    log.update(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
                               prewarmed=event.prewarmed, idle=event.prewarmed_waiting)
                if streamer is None or _gone(signal):
                    continue
                if not started:
                    if isinstance(event, ErrorEvent):
                        continue  # answered below with its own status
                    started = True
                    await send({"type": "http.response.start", "status": 200,
                                "headers": [(b"content-type", b"text/event-stream; charset=utf-8"),
                                            (b"cache-control", b"no-cache"), (b"x-accel-buffering", b"no")]})
                    await send({"type": "http.response.body", "body": streamer.opening(), "more_body": True})
                if isinstance(event, ErrorEvent) and event.code == "aborted":
                    chunk = streamer.failed(_STOPPING)
                else:
                    chunk = streamer.feed(event)
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        if _gone(signal):
            return
        if started:
            await send({"type": "http.response.body", "body": b""})
        elif isinstance(outcome, Done):
            await _send_json(send, 200, wire.message(parsed, outcome.message))
        elif isinstance(outcome, ErrorEvent):
            error = _STOPPING if outcome.code == "aborted" else provider_error(outcome)
            await _send_error(send, wire, error)
        else:
            await _send_error(send, wire, ApiError(500, "api", "the provider ended without a result"))


_DISCONNECTED = "the client disconnected"


def _gone(signal: CancelSignal) -> bool:
    return signal.reason == _DISCONNECTED


async def _watch(receive: Receive, signal: CancelSignal) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    signal.cancel(_DISCONNECTED)


def _models(state: ServeState) -> list[dict[str, Any]]:
    """The CLI's aliases; `description` says which model ids each one answers for."""
    created = int(time.time())
    return [{"id": spec.id, "object": "model", "type": "model", "created": created,
             "created_at": "2025-01-01T00:00:00Z", "owned_by": "claude-code", "display_name": spec.name,
             "description": f"also answers for claude-code/{spec.id} and every claude-{spec.id}-* id "
                            f"(dated ids and [..] suffixes included)"}
            for spec in provider_spec(state.host.registry.providers).models]


class _CountTokens:
    """`POST /v1/messages/count_tokens`: an estimate (see `hostlink.serve.tokens`)."""

    def __init__(self, state: ServeState) -> None:
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await _count_tokens(self.state, scope, receive, send)


async def _count_tokens(state: ServeState, scope: Scope, receive: Receive, send: Send) -> None:
    try:
        payload = await read_json(scope, receive)
        context = anthropic.count_tokens_context(payload, provider_spec(state.host.registry.providers))
        access_log.facts(scope)["model"] = payload["model"]
    except ClientGone:
        return
    except ApiError as error:
        await _send_error(send, anthropic, error)
        return
    await _send_json(send, 200, {"input_tokens": tokens.estimate(context)}, [tokens.HEADER])


_COLUMNS = [["time", "time"], ["endpoint", "endpoint"], ["model", "model"], ["status", "status"], ["ms", "duration"],
            ["input_tokens", "tokens in"], ["output_tokens", "tokens out"], ["prewarmed", "prewarmed"]]


def _status(state: ServeState, plan: PlanGuard, recent: Recent) -> dict[str, Any]:
    """What the status page shows (`hostlink.serve.status_page`): the access log's ring."""
    rows = recent.rows()
    waiting = next((row["idle"] for row in rows if row.get("idle") is not None), None)
    return {"plan": usage_as_json(plan.latest(), plan.mode()), "columns": _COLUMNS, "recent": rows,
            "slots": {"in_flight": len(state.running), "max": state.max_concurrent, "waiting": waiting}}


def create_app(host_session: HostSession, *, token: str, max_concurrent: int = DEFAULT_MAX_CONCURRENT,
               allowed_hosts: frozenset[str] | None = None, extra_usage: str | None = None,
               access: Callable[[str], None] | None = None) -> Starlette:
    """The endpoint as an ASGI app over a started `host_session` with `claude-code`.

    `allowed_hosts` are the accepted `Host` headers (default: the loopback address and
    port the request arrived on, and `localhost` with that port). `access` receives one
    access-log line per request (None: no log; the status page at `/` keeps the last ones
    either way, `hostlink.serve.status`). `app.state.serve` is the
    `ServeState` (`stop_all()` cancels every running request). `extra_usage`
    is the guard's mode the extension was given (`hostlink.serve.usage` reports it).
    """
    state = ServeState(host_session, token, max_concurrent, allowed_hosts)
    plan = PlanGuard(extra_usage)
    plan.mode()  # a bad HOSTLINK_CLAUDE_EXTRA_USAGE is refused here, naming it, not on each answer
    metrics = ServeMetrics(lambda: len(state.running), max_concurrent, plan.latest)
    recent = Recent()
    providers = host_session.registry.providers

    async def models(request: Request) -> JSONResponse:
        data = _models(state)
        wanted = request.path_params.get("model")
        if wanted is not None:
            spec = model_alias(provider_spec(state.host.registry.providers), wanted)
            found = [item for item in data if spec is not None and item["id"] == spec.id]
            if not found:
                raise ApiError(404, "model_not_found", f"model {wanted[:80]!r} not found")
            return JSONResponse(found[0])
        return JSONResponse({"object": "list", "data": data, "has_more": False,
                             "first_id": data[0]["id"] if data else None,
                             "last_id": data[-1]["id"] if data else None})

    async def api_error(request: Request, error: Exception) -> JSONResponse:
        if isinstance(error, HTTPException):
            kind = {404: "not_found", 405: "invalid_request"}.get(error.status_code, "invalid_request")
            error = ApiError(error.status_code, kind, f"no such endpoint or method: {request.method} "
                                                      f"{request.url.path[:80]}")
        assert isinstance(error, ApiError)
        body = with_reset(_wire(request.scope).error_body(error), error.resets_at)
        return JSONResponse(body, status_code=error.status)

    app = Starlette(
        routes=[
            Route("/v1/messages", _Generate(state, anthropic), methods=["POST"]),
            Route("/v1/chat/completions", _Generate(state, openai), methods=["POST"]),
            Route("/v1/responses", _Generate(state, state.responses), methods=["POST"]),
            Route("/v1/messages/count_tokens", _CountTokens(state),
                  methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/models/{model:path}", models, methods=["GET"]),
            Route("/v1/usage", usage_route(plan), methods=["GET"]),
            Route("/metrics", metrics_route(metrics), methods=["GET"]),
        ],
        middleware=[Middleware(access_log.AccessLog, write=access, recent=recent),
                    Middleware(TraceRequests), Middleware(CountRequests, metrics=metrics, providers=providers),
                    Middleware(_LastResort), Middleware(StatusPage, key=token, title="hostlink serve",
                                                        check=lambda scope: state.check(scope, key=False,
                                                                                        own_origin=True),
                                                        snapshot=lambda: _status(state, plan, recent)),
                    Middleware(_Guard, state=state), Middleware(PlanHeaders, guard=plan)],
        exception_handlers={HTTPException: api_error, ApiError: api_error},
    )
    app.state.serve = state
    return app
