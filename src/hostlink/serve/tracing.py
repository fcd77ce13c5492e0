"""A server span per HTTP request to `hostlink serve`, continuing the client's `traceparent`.

The provider request's `chat` span and its phases become its children, so a client that traces
(the OpenAI and Anthropic SDKs under an instrumented agent) sees one trace from its call to the
`claude` child's cleanup. The span names the route, never the path a client wrote (a model id
in `/v1/models/{model}` is the client's text) and holds no header, query or body.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from hostlink.host import telemetry

Scope = MutableMapping[str, Any]
ROUTES = ("/v1/messages", "/v1/messages/count_tokens", "/v1/chat/completions", "/v1/responses", "/v1/models",
          "/v1/usage", "/api/hello", "/metrics", "/", "/status.json", "/sign-out")


def route(path: str) -> str:
    """The route a path belongs to, from a fixed set (`other` for anything else)."""
    if path in ROUTES:
        return path
    return "/v1/models/{model}" if path.startswith("/v1/models/") else "other"


class TraceRequests:
    """ASGI middleware: one SERVER span around each HTTP request, with its status."""

    def __init__(self, app: Callable[..., Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope.get("headers", ())
                   if key.lower() in (b"traceparent", b"tracestate")}
        method, path = str(scope.get("method", ""))[:10], route(scope.get("path", ""))
        attributes = {"http.request.method": method, "http.route": path, "url.scheme": "http"}
        with telemetry.span(f"{method} {path}", attributes, kind="server", context=telemetry.incoming(headers)) as span:

            async def sending(message: MutableMapping[str, Any]) -> None:
                if message["type"] == "http.response.start":
                    status = int(message["status"])
                    span.set_attribute("http.response.status_code", status)
                    if status >= 500:
                        telemetry.fail(span, str(status))
                await send(message)

            await self.app(scope, receive, sending)
