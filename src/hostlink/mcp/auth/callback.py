"""The loopback receiver of OAuth authorization callbacks.

hostlink never opens a browser: it hands the user an authorization link, and the
authorization server redirects the user's browser back to a listener on 127.0.0.1 (or ::1).
That listener accepts exactly one GET per sign-in flow, at the exact Host and path, with one
`state` equal (in constant time) to the flow's. Anything else gets a 400 and leaves every
flow untouched. One listener serves all flows that share its address, and it closes when
the last of them ends. Answers are short plain text that browsers must not cache or refer;
the answer to an accepted callback waits (bounded) for the sign-in's own result message.
"""

from __future__ import annotations

import asyncio
import hmac
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.abc
import h11

from hostlink.mcp.errors import AuthError

DEFAULT_PATH = "/callback"
MAX_REQUEST_BYTES = 8192
MAX_TARGET_CHARS = 4096
READ_TIMEOUT_SECONDS = 10.0
OUTCOME_WAIT_SECONDS = 20.0  # how long the browser's answer waits for the sign-in's result
_HEADERS = [
    (b"content-type", b"text/plain; charset=utf-8"),
    (b"cache-control", b"no-store"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-content-type-options", b"nosniff"),
    (b"connection", b"close"),
]
KNOWN_AUTHORIZATION_ERRORS = frozenset(
    {
        "invalid_request",
        "unauthorized_client",
        "access_denied",
        "unsupported_response_type",
        "invalid_scope",
        "server_error",
        "temporarily_unavailable",
    }
)


@dataclass(frozen=True)
class Callback:
    """What a valid callback carried for its flow."""

    code: str | None
    state: str
    iss: str | None
    error: str | None  # a known OAuth error code, or "unknown_error"


def parse_redirect_uri(redirect_uri: str | None) -> tuple[str, int, str]:
    """(host, port, path) for the listener; a configured redirect URI must be loopback http."""
    if redirect_uri is None:
        return "127.0.0.1", 0, DEFAULT_PATH
    parts = urlsplit(redirect_uri)
    host = parts.hostname or ""
    loopback = host in ("127.0.0.1", "::1")  # the addresses the listener binds, never a name
    if parts.scheme != "http" or not loopback or parts.port is None or parts.query or parts.fragment:
        raise AuthError("oauth.redirectUri must be http://127.0.0.1:PORT/PATH or http://[::1]:PORT/PATH")
    return host, parts.port, parts.path or "/"


@dataclass(eq=False)
class Flow:
    """One sign-in waiting for its callback; `state` is set once the link is known."""

    receiver: CallbackReceiver
    path: str
    state: str | None = None
    result: Callback | None = None
    done: anyio.Event = field(default_factory=anyio.Event)
    outcome: str | None = None
    finished: anyio.Event = field(default_factory=anyio.Event)

    @property
    def redirect_uri(self) -> str:
        return f"{self.receiver.origin}{self.path}"

    def expect(self, state: str) -> None:
        self.state = state

    async def wait(self) -> Callback:
        await self.done.wait()
        assert self.result is not None
        return self.result

    def finish(self, outcome: str) -> None:
        """The sign-in's result, for the browser that delivered the callback (local text only)."""
        self.outcome = outcome
        self.finished.set()

    def end(self) -> None:
        """Forget this flow (consumed, failed or cancelled); the last one closes the listener."""
        self.receiver.release(self)


class CallbackReceiver:
    """One loopback HTTP listener shared by the flows at its address."""

    def __init__(self, hub: CallbackHub, host: str, port: int) -> None:
        self._hub = hub
        self.host = host
        self.port = port
        self._flows: list[Flow] = []
        self._task: asyncio.Task[None] | None = None
        self._active = 0  # connections being answered; the listener stops only after them
        self._closing = False

    @property
    def origin(self) -> str:
        literal = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{literal}:{self.port}"

    async def start(self) -> None:
        listener = await anyio.create_tcp_listener(local_host=self.host, local_port=self.port)
        self.port = listener.extra(anyio.abc.SocketAttribute.local_port)
        self._task = asyncio.get_running_loop().create_task(self._serve(listener))

    def add(self, path: str) -> Flow:
        flow = Flow(self, path)
        self._flows.append(flow)
        return flow

    def release(self, flow: Flow) -> None:
        if flow in self._flows:
            self._flows.remove(flow)
        if not self._flows:
            self.close()

    def close(self) -> None:
        """Stop accepting; answers being written still finish (each is time-bounded)."""
        self._hub.forget(self)
        self._closing = True
        if self._active == 0:
            self._stop()

    def _stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def _serve(self, listener: anyio.abc.Listener[anyio.abc.SocketStream]) -> None:
        try:
            await listener.serve(self._handle)
        finally:
            await listener.aclose()

    async def _handle(self, stream: anyio.abc.SocketStream) -> None:
        self._active += 1
        try:
            await self._respond(stream)
        finally:
            self._active -= 1
            if self._closing and self._active == 0:
                self._stop()

    async def _respond(self, stream: anyio.abc.SocketStream) -> None:
        async with stream:
            connection = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_REQUEST_BYTES)
            try:
                with anyio.fail_after(READ_TIMEOUT_SECONDS):
                    request = await _read_request(stream, connection)
                status, text, flow = self._answer(request)
                if flow is not None:
                    with anyio.move_on_after(OUTCOME_WAIT_SECONDS):
                        await flow.finished.wait()
                    text = f"{flow.outcome or text} You can close this tab.\n"
            except (h11.RemoteProtocolError, TimeoutError, anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                status, text = 400, "Bad request.\n"
            body = text.encode("utf-8")
            reason = b"OK" if status == 200 else b"Bad Request"
            head = b"HTTP/1.1 %d %s\r\n" % (status, reason)
            head += b"".join(name + b": " + value + b"\r\n" for name, value in _HEADERS)
            head += b"content-length: %d\r\n\r\n" % len(body)
            try:
                await stream.send(head + body)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                pass

    def _answer(self, request: h11.Request) -> tuple[int, str, Flow | None]:
        """(status, text, the flow this callback consumed — None when it was refused)."""
        target = request.target.decode("ascii", "replace")
        headers: dict[str, list[str]] = {}
        for name, value in request.headers:
            headers.setdefault(name.decode("ascii", "replace").lower(), []).append(value.decode("latin-1"))
        if request.method != b"GET" or len(target) > MAX_TARGET_CHARS:
            return 400, "Bad request.\n", None
        host = self.origin.removeprefix("http://")
        if headers.get("host") != [host] or headers.get("origin", [self.origin]) != [self.origin]:
            return 400, "Bad request.\n", None
        parts = urlsplit(target)
        query = parse_qs(parts.query, keep_blank_values=True)
        states = query.get("state", [])
        if len(states) != 1:
            return 400, "Bad request.\n", None
        flow = self._match(states[0], parts.path)
        if flow is None:
            return 400, "Bad request.\n", None
        codes, errors, issuers = query.get("code", []), query.get("error", []), query.get("iss", [])
        if len(issuers) > 1 or len(codes) + len(errors) != 1 or (codes and not codes[0]):
            return 400, "Bad request.\n", None
        error = None
        if errors:
            error = errors[0] if errors[0] in KNOWN_AUTHORIZATION_ERRORS else "unknown_error"
        flow.result = Callback(codes[0] if codes else None, states[0], issuers[0] if issuers else None, error)
        flow.done.set()
        flow.end()
        return 200, "Sign-in received; hostlink is completing it.", flow

    def _match(self, state: str, path: str) -> Flow | None:
        found = None
        for flow in self._flows:
            if flow.state is not None and hmac.compare_digest(flow.state.encode(), state.encode()):
                found = flow
        if found is None or found.path != path or found.done.is_set():
            return None
        return found


async def _read_request(stream: anyio.abc.SocketStream, connection: h11.Connection) -> h11.Request:
    while True:
        event = connection.next_event()
        if event is h11.NEED_DATA:
            data = await stream.receive(4096)
            connection.receive_data(data)
            continue
        if isinstance(event, h11.Request):
            return event
        raise h11.RemoteProtocolError("unexpected event")


class CallbackHub:
    """The receivers of one AuthManager, one per loopback address in use."""

    def __init__(self) -> None:
        self._receivers: dict[tuple[str, int], CallbackReceiver] = {}

    async def open_flow(self, redirect_uri: str | None) -> Flow:
        """A new flow on the receiver for `redirect_uri` (a shared ephemeral port if unset)."""
        host, port, path = parse_redirect_uri(redirect_uri)
        receiver = self._receivers.get((host, port))
        if receiver is None:
            receiver = CallbackReceiver(self, host, port)
            try:
                await receiver.start()
            except OSError:
                raise AuthError(f"cannot listen for the authorization callback on {receiver.origin}") from None
            self._receivers[(host, port)] = receiver
        return receiver.add(path)

    def forget(self, receiver: CallbackReceiver) -> None:
        for key, value in list(self._receivers.items()):
            if value is receiver:
                del self._receivers[key]

    @property
    def listening(self) -> int:
        return len(self._receivers)

    def close(self) -> None:
        for receiver in list(self._receivers.values()):
            receiver.close()
