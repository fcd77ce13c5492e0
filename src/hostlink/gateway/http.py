"""The gateway on Streamable HTTP: the SDK's app on 127.0.0.1 or [::1] only, served as
`hostlink serve` is (its connection bound, request and write deadlines, bounded logs), behind
the same Host / Origin / key check (its `ServeState`; the key only as `Authorization: Bearer`,
the header MCP hosts send), answered as JSON-RPC errors. The key is in memory and in a 0600
file of a private runtime directory, removed at the end with everything else the session made.
At the bound on open sessions the least recently used idle one makes room (`eviction`).
`/` is the status page (`hostlink.serve.status`, behind the same key by its sign-in form)."""

from __future__ import annotations

import http
import json
import signal as signals
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from hostlink.gateway.eviction import evict_when_full
from hostlink.host.platform.console import TERMINATING_SIGNALS

if TYPE_CHECKING:
    from hostlink.gateway.metrics import GatewayMetrics
    from hostlink.gateway.server import Gateway

STOP_SIGNALS = (signals.SIGINT, *TERMINATING_SIGNALS)
PATH = "/mcp"
METRICS_PATH = "/metrics"
MAX_SESSIONS = 100  # open MCP sessions (about 40 KiB each, plus what waits for them); then the least
# recently used idle one ends for a newcomer, who gets 503 only when every one is busy (`eviction`)
SESSION_IDLE_SECONDS = 15 * 60  # a session with no request in flight and no GET stream open this long ends
MAX_BODY_BYTES = 4 * 1024 * 1024  # the SDK's own default bound (`DEFAULT_MAX_REQUEST_BODY_SIZE`)
UNAUTHORIZED = -32001  # the key or the Host / Origin check: the code the gateway has always answered
INVALID_REQUEST = -32600
INTERNAL_ERROR = -32603
Message = MutableMapping[str, Any]
Send = Callable[[Message], Awaitable[None]]


class _Guard:
    """Every HTTP request passes the serve endpoint's check first (403 / 401 otherwise). A POST's
    body is read here, bounded (413), and a message whose `id` is neither a string nor an integer
    is refused (the SDK would take it for a notification: 202, never answered). Every refusal,
    the SDK's and Starlette's plain-text or empty ones included (a wrong Content-Type, 405,
    406, 404), is a JSON-RPC error."""

    def __init__(self, app: Any, check: Callable[[MutableMapping[str, Any]], None],
                 metrics: GatewayMetrics | None = None) -> None:
        self._app = app
        self._check = check
        self._metrics = metrics  # answers GET /metrics once the check passed

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        from hostlink.serve.body import ClientGone, read_body
        from hostlink.serve.core import ApiError

        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        send = _json_refusals(send)
        body = None
        try:
            self._check(scope)
            if scope["method"] == "POST":
                body = bytes(await read_body(scope, receive, MAX_BODY_BYTES))
                _check_id(body)
        except ApiError as refused:
            code = UNAUTHORIZED if refused.status in (401, 403) else INVALID_REQUEST
            await _send_error(send, refused.status, code, refused.message)
            return
        except ClientGone:
            return
        if self._metrics is not None and scope["path"] == METRICS_PATH and scope["method"] == "GET":
            await self._metrics.answer(send)
            return
        await self._app(scope, receive if body is None else _replay(body, receive), send)


def _check_id(body: bytes) -> None:
    """MCP ids are strings or integers (never null): any other `id` is an Invalid Request."""
    from hostlink.serve.core import ApiError

    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return  # the SDK answers its own parse error
    if isinstance(message, dict) and "id" in message:
        ident = message["id"]
        if isinstance(ident, bool) or not isinstance(ident, (str, int)):
            raise ApiError(400, "invalid_request", "Invalid Request: the id must be a string or an integer")


def _replay(body: bytes, receive: Any) -> Callable[[], Awaitable[Message]]:
    """The body read here, then the connection's own messages (a disconnect)."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replayed() -> Message:
        return pending.pop() if pending else await receive()

    return replayed


def _json_refusals(send: Send) -> Send:
    """`send`, where an error answer that is not JSON (the SDK's and Starlette's plain-text
    refusals) becomes a JSON-RPC error of the same status, its text as the message."""
    held: Message | None = None
    text = b""

    async def sending(message: Message) -> None:
        nonlocal held, text
        if message["type"] == "http.response.start" and message["status"] >= 400 and not _is_json(message):
            held = message
            return
        if held is None:
            await send(message)
            return
        text = (text + message.get("body", b""))[:200]
        if not message.get("more_body", False):
            shown = "".join(c for c in text.decode("ascii", "replace") if c.isprintable()).strip()
            status = held["status"]
            kept = [(k, v) for k, v in held.get("headers", ()) if k.lower() in (b"allow", b"mcp-session-id")]
            await _send_error(send, status, INVALID_REQUEST if status < 500 else INTERNAL_ERROR,
                              shown or http.HTTPStatus(status).phrase, kept)

    return sending


def _is_json(start: Message) -> bool:
    return any(key.lower() == b"content-type" and value.lower().startswith(b"application/json")
               for key, value in start.get("headers", ()))


async def _send_error(send: Send, status: int, code: int, message: str,
                      headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"cache-control", b"no-store"),
                            (b"content-length", str(len(body)).encode()), *(headers or [])]})
    await send({"type": "http.response.body", "body": body})


async def serve_http(gateway: Gateway, *, address: str, port: int, token: str, cwd: Path,
                     environ: Mapping[str, str], trust_flag: bool,
                     on_listening: Callable[[str, Path], None]) -> int | None:
    """Serve until a stop signal; returns its number (None otherwise)."""
    from hostlink.gateway import status
    from hostlink.gateway.metrics import GatewayMetrics
    from hostlink.host.private import create_private_dir, remove_private_dir, write_private_file
    from hostlink.serve.app import ServeState
    from hostlink.serve.server import loopback_address, run_loopback
    from hostlink.serve.status import StatusPage

    bind = loopback_address(address)
    directory = None
    server = gateway.server()  # the SDK is imported before the session's background imports start
    app = server.streamable_http_app(streamable_http_path=PATH, host=bind, max_sessions=MAX_SESSIONS,
                                     session_idle_timeout=SESSION_IDLE_SECONDS)
    evict_when_full(server.session_manager, gateway.notifier)
    try:
        await gateway.start(cwd, environ, trust_flag=trust_flag)
        directory = create_private_dir("mcp-serve")
        key_file = write_private_file(directory, "key", token)
        gateway.metrics = metrics = GatewayMetrics(lambda: gateway.extension.numbers)
        state = ServeState(gateway.host, token, 1, None, bearer_only=True)
        guard = StatusPage(_Guard(app, state.check, metrics), key=token, title=status.TITLE,
                           check=lambda scope: state.check(scope, key=False, own_origin=True),
                           snapshot=lambda: status.snapshot(gateway.extension.runtime, metrics))
        shown = f"[{bind}]" if ":" in bind else bind
        async with gateway.following():
            return await run_loopback(guard, bind=bind, port=port, max_concurrent=1, lifespan="on",
                                      graceful_seconds=5,
                                      on_listening=lambda bound: on_listening(f"http://{shown}:{bound}{PATH}",
                                                                              key_file))
    finally:
        with anyio.CancelScope(shield=True):
            try:
                await gateway.host_tasks.aclose()  # what the hosts left running, cancelled upstream
                await gateway.host.shutdown()
            finally:
                if directory is not None:
                    remove_private_dir(directory)
