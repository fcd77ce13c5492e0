"""The Streamable HTTP transport, and the one HTTP transport under every MCP and OAuth request.

`SafeTransport` holds where a request may go and what it may bring back. Servers and
authorization servers name URLs in their metadata (protected-resource metadata,
authorization-server endpoints); each is held to the configuration's rule — https, http only
on a loopback host — before anything is sent to it, and a challenge may point to
protected-resource metadata only on the server's own origin. Response bodies are decoded here,
in bounded steps, so a small compressed body cannot inflate past the bound; a body (other than
an event stream, whose events the SDK bounds) that exceeds it is refused.

`HttpTransport` is one connection generation of an HTTP server: the SDK client over
an httpx2 client with the server's headers, its auth and a SafeTransport, which records the
error statuses of the setup and every answer that asked for credentials.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.abc
import httpx2

from hostlink.mcp.config.schema import check_url
from hostlink.mcp.errors import AuthError, AuthRequired, ConnectFailed, McpError

if TYPE_CHECKING:
    from mcp import Client

    from hostlink.mcp.config.schema import HttpServer

DECODE_STEP_BYTES = 64 * 1024
MAX_MESSAGE_BYTES = 32 * 1024 * 1024  # one decoded HTTP response of an MCP server
_RESOURCE_METADATA = re.compile(r'resource_metadata\s*=\s*(?:"([^"]*)"|([^\s,]+))', re.IGNORECASE)


class UnsafeRequest(McpError):
    """A request to a URL that breaks the URL rule was refused before it was sent."""


class ResponseTooLarge(McpError, httpx2.StreamError):
    """A response body exceeded its bound once decoded. A StreamError, so the SDK fails just the
    one message it was reading and keeps the connection."""


def _origin(url: httpx2.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port


class _Inflate:
    """gzip or deflate decoding that yields at most one step of output at a time."""

    def __init__(self, encoding: str) -> None:
        self._deflate = encoding == "deflate"  # zlib-wrapped by the RFC, raw in the wild
        self._z = zlib.decompressobj(15 if self._deflate else 31)
        self._started = False

    def steps(self, data: bytes) -> Iterator[bytes]:
        while data:
            try:
                piece = self._z.decompress(data, DECODE_STEP_BYTES)
            except zlib.error:
                if not (self._deflate and not self._started):
                    raise httpx2.DecodingError("the response body is not valid compressed data") from None
                self._z, self._deflate = zlib.decompressobj(-15), False
                continue
            self._started = True
            if not piece:
                return  # zlib took all the input in (a tail is only left when a step is full)
            yield piece
            data = self._z.unconsumed_tail

    def flush(self) -> bytes:
        return self._z.flush()


class _BoundedBody(httpx2.AsyncByteStream):
    """A response body decoded step by step; past `limit` decoded bytes, refused."""

    def __init__(self, raw: httpx2.AsyncByteStream, encoding: str, limit: int | None,
                 transport: SafeTransport) -> None:
        self._raw, self._limit, self._transport = raw, limit, transport
        self._inflate = _Inflate(encoding) if encoding != "identity" else None

    async def __aiter__(self) -> AsyncIterator[bytes]:
        total = 0
        async for chunk in self._raw:
            for piece in self._inflate.steps(chunk) if self._inflate is not None else (chunk,):
                total += len(piece)
                if self._limit is not None and total > self._limit:
                    raise self._transport.refused(ResponseTooLarge(
                        f"a response exceeded {self._limit // (1024 * 1024)} MiB once decoded; "
                        "it was not read further"))
                yield piece
        if self._inflate is not None and (tail := self._inflate.flush()):
            yield tail

    async def aclose(self) -> None:
        await self._raw.aclose()


def _encoding(response: httpx2.Response) -> str:
    values = [value.strip().lower() for value in response.headers.get_list("content-encoding", split_commas=True)]
    values = [value for value in values if value and value != "identity"]
    if not values:
        return "identity"
    if len(values) == 1 and values[0] in ("gzip", "x-gzip", "deflate"):
        return values[0]
    raise UnsafeRequest("a response used a content encoding other than gzip or deflate; it was not read")


def _check_challenge(request: httpx2.Request, response: httpx2.Response) -> None:
    """A challenge may name protected-resource metadata only on the server's own origin."""
    if response.status_code not in (401, 403):
        return
    for header in response.headers.get_list("www-authenticate"):
        for quoted, bare in _RESOURCE_METADATA.findall(header):
            try:
                target = httpx2.URL(quoted or bare)
            except httpx2.InvalidURL:
                raise UnsafeRequest("a challenge named invalid resource metadata; it was refused") from None
            if _origin(target) != _origin(request.url):
                raise UnsafeRequest("a challenge named resource metadata on another origin than the server's; "
                                    "it was refused before anything was sent there")


class SafeTransport(httpx2.AsyncBaseTransport):
    """httpx2's transport with the URL rule on every request and decoded bodies bounded by `limit`.

    `refusals` counts what was refused, `refusal` is the last one: a caller that sees a
    failure from inside the SDK can tell that this transport refused and say why.
    """

    def __init__(self, limit: int) -> None:
        self._inner = httpx2.AsyncHTTPTransport()
        self._limit = limit
        self.refusals = 0
        self.refusal: McpError | None = None
        self.failed_posts = 0

    def refused(self, error: McpError) -> McpError:
        self.refusals += 1
        self.refusal = error
        return error

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            return await self._handle(request)
        except Exception:
            if request.method == "POST":
                self.failed_posts += 1  # the SDK's Streamable HTTP transport ends with its POST
            raise

    async def _handle(self, request: httpx2.Request) -> httpx2.Response:
        try:
            check_url(str(request.url))
        except ValueError as problem:
            raise self.refused(UnsafeRequest(
                f"a request to a URL named by server metadata was refused before it was sent: {problem}")) from None
        request.headers["Accept-Encoding"] = "gzip, deflate"
        response = await self._inner.handle_async_request(request)
        try:
            _check_challenge(request, response)
            encoding = _encoding(response)
        except UnsafeRequest as error:
            await response.aclose()
            raise self.refused(error) from None
        streamed = response.headers.get("content-type", "").lower().startswith("text/event-stream")
        headers = [(key, value) for key, value in response.headers.multi_items()
                   if key.lower() not in ("content-encoding", "content-length")]
        limit = None if streamed else self._limit
        body = _BoundedBody(response.stream, encoding, limit, self)  # type: ignore[arg-type]  # async here, always
        return httpx2.Response(response.status_code, headers=headers, stream=body,
                               extensions=response.extensions, request=request)

    async def aclose(self) -> None:
        await self._inner.aclose()


def challenge_of(response: httpx2.Response) -> tuple[int, str] | None:
    """A 401, or a 403 asking for more scope (step-up), as (status, WWW-Authenticate)."""
    header = response.headers.get("www-authenticate", "")
    if response.status_code == 401 or (response.status_code == 403 and "insufficient_scope" in header):
        return response.status_code, header
    return None


class HttpTransport:
    """One connection generation of a Streamable HTTP server (see `hostlink.mcp.transports.Transport`).

    `auth` gives the connection's httpx2 auth (None for none); `ready` is set once the
    setup is done, after which error statuses are no longer the setup's.
    """

    name: Literal["http"] = "http"
    pid = None  # no process of ours

    def __init__(self, config: HttpServer, auth: Callable[[], Awaitable[httpx2.Auth | None]],
                 ready: anyio.Event) -> None:
        self._config, self._auth, self._ready = config, auth, ready
        self.safe = SafeTransport(MAX_MESSAGE_BYTES)
        self.statuses: list[int] = []  # error statuses seen during setup
        self.challenges = 0  # answers that asked for credentials (401, 403 insufficient_scope), ever
        self.challenge = ""  # how the last one read: "HTTP 401" or "HTTP 403, insufficient_scope"

    @property
    def refusal(self) -> McpError | None:
        """What the SafeTransport refused last: a failure inside the SDK can say why."""
        return self.safe.refusal

    @property
    def refusals(self) -> int:
        return self.safe.refusals

    @property
    def ended(self) -> bool:
        return self.safe.failed_posts > 0

    async def connect(self, stack: AsyncExitStack, group: anyio.abc.TaskGroup,
                      client_for: Callable[[Any, str], Client], mode: str) -> Client:
        from mcp.client.streamable_http import streamable_http_client

        config = self._config
        timeout = config.request_timeout_ms / 1000
        auth = await self._auth()

        async def record(response: httpx2.Response) -> None:
            if response.status_code >= 400 and not self._ready.is_set():
                self.statuses.append(response.status_code)
            if challenge_of(response) is not None:
                self.challenges += 1
                self.challenge = "HTTP 401" if response.status_code == 401 else "HTTP 403, insufficient_scope"

        http = httpx2.AsyncClient(headers=dict(config.headers), auth=auth, transport=self.safe,
                                  timeout=httpx2.Timeout(timeout, read=max(timeout, 300.0)),
                                  event_hooks={"response": [record]})
        await stack.enter_async_context(http)
        client = client_for(streamable_http_client(config.url, http_client=http), mode)
        await stack.enter_async_context(client)
        return client

    async def abandon(self) -> None:
        pass

    async def settle(self) -> None:
        pass

    def release(self) -> None:
        pass

    def note(self) -> str:
        return ""

    def said(self) -> str | None:
        return None

    def setup_error(self, name: str, exc: BaseException) -> McpError | None:
        """A setup failure only HTTP has (a failing status that did not ask for credentials, an
        unreachable URL) as a safe error; None leaves it to the caller."""
        if self.statuses and not isinstance(exc, (AuthRequired, AuthError)):
            status = self.statuses[-1]
            if status == 403:
                return AuthError(f"MCP server {name!r} refused access (HTTP 403)")
            if status >= 500:
                return ConnectFailed(f"MCP server {name!r} is unavailable (HTTP {status})")
            if status in (404, 405):
                return ConnectFailed(f"MCP server {name!r} has no MCP endpoint at its URL (HTTP {status})")
        if isinstance(exc, httpx2.TransportError) and not isinstance(exc, McpError):
            return ConnectFailed(f"MCP server {name!r} cannot be reached at its URL ({type(exc).__name__})")
        return None
