"""One access-log line per request, for the person running the endpoint.

``2026-01-02T03:04:05Z POST /v1/messages 200 model=sonnet 812ms in=11 out=7 prewarmed=no``:
time (UTC, when the request arrived), method, path (no query string), status, the model the
client named, duration, input/output tokens and whether a prewarmed ``claude`` answered
(``-`` when not known). Never prompt text, arguments, headers or the key; the model name is
cut and stripped of anything but a narrow set of characters, so a client cannot write into
the log.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
FACTS = "hostlink.access"  # the scope key a handler fills with model, tokens, prewarmed
_UNSAFE = re.compile(r"[^A-Za-z0-9._:/\[\]-]")


def facts(scope: Scope) -> dict[str, Any]:
    """Where a handler records what the log line shows about its request."""
    return scope.setdefault(FACTS, {})


def _safe(value: Any, limit: int = 60) -> str:
    return _UNSAFE.sub("?", str(value))[:limit] or "-"


def line(started: float, method: str, path: str, status: int, seconds: float, known: dict[str, Any]) -> str:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started))
    prewarmed = {True: "yes", False: "no"}.get(known.get("prewarmed"), "-")
    tokens = (f"in={known['input_tokens']} out={known['output_tokens']}" if "input_tokens" in known
              else "in=- out=-")
    return (f"{stamp} {_safe(method, 10)} {_safe(path, 120)} {status} model={_safe(known.get('model', '-'))} "
            f"{int(seconds * 1000)}ms {tokens} prewarmed={prewarmed}")


class AccessLog:
    """ASGI middleware: writes one line with ``write`` when each HTTP request ends."""

    def __init__(self, app: Callable[..., Awaitable[None]], write: Callable[[str], None]) -> None:
        self.app = app
        self.write = write

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started, clock = time.time(), time.monotonic()
        status = [0]

        async def sending(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            self.write(line(started, scope.get("method", ""), scope.get("path", ""), status[0],
                            time.monotonic() - clock, scope.get(FACTS, {})))
