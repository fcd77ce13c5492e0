"""One access-log line per request, for the person running the endpoint.

`2026-01-02T03:04:05Z POST /v1/messages 200 model=sonnet 812ms in=11 out=7 prewarmed=no idle=1`
gives the time (UTC, when the request arrived), method, path (no query string), status, the
model the client named, duration, input/output tokens, whether a prewarmed `claude`
answered, and how many prewarmed `claude` processes wait idle for a conversation's next
round once it ended (at most one per `--max-concurrent` slot); `-` when not known. Never
prompt text, arguments, headers or the key; the model name is cut and stripped of anything
but a narrow set of characters, so a client cannot write into the log. The same facts are a
row of the status page's ring (`hostlink.serve.status.Recent`), there with the model as the
client wrote it, cut short: the page shows it as text.

A refused request (a 4xx) is logged once per status a minute, the next such line saying how
many were not shown: a flood of refused connections (no key, a web page's Origin, more than
the slots) stays a few lines, while every answered request keeps its own line.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from hostlink.serve import status as status_routes
from hostlink.serve.status import Recent
from hostlink.serve.tracing import route

Scope = MutableMapping[str, Any]
FACTS = "hostlink.access"  # the scope key a handler fills with model, tokens, prewarmed, idle
_UNSAFE = re.compile(r"[^A-Za-z0-9._:/\[\]-]")
REFUSALS_EVERY_SECONDS = 60.0


def facts(scope: Scope) -> dict[str, Any]:
    """Where a handler records what the log line shows about its request."""
    known: dict[str, Any] = scope.setdefault(FACTS, {})
    return known


def _safe(value: Any, limit: int = 60) -> str:
    return _UNSAFE.sub("?", str(value))[:limit] or "-"


def line(started: float, method: str, path: str, status: int, seconds: float, known: dict[str, Any]) -> str:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started))
    prewarmed = {True: "yes", False: "no"}.get(known["prewarmed"], "-") if "prewarmed" in known else "-"
    tokens = (f"in={known['input_tokens']} out={known['output_tokens']}" if "input_tokens" in known
              else "in=- out=-")
    idle = known.get("idle")
    return (f"{stamp} {_safe(method, 10)} {_safe(path, 120)} {status} model={_safe(known.get('model', '-'))} "
            f"{int(seconds * 1000)}ms {tokens} prewarmed={prewarmed} idle={'-' if idle is None else int(idle)}")


class _Refusals:
    """Which 4xx lines are shown: the first of each status a minute, then one with a count."""

    def __init__(self) -> None:
        self._last: dict[int, tuple[float, int]] = {}  # status -> (when last shown, not shown since)

    def suffix(self, status: int, now: float) -> str | None:
        """None: not shown; otherwise what the shown line ends with."""
        shown, hidden = self._last.get(status, (-REFUSALS_EVERY_SECONDS, 0))
        if now - shown < REFUSALS_EVERY_SECONDS:
            self._last[status] = (shown, hidden + 1)
            return None
        self._last[status] = (now, 0)
        return f" (and {hidden} more {status} not shown)" if hidden else ""


class AccessLog:
    """ASGI middleware: when each HTTP request ends, one line with `write` (None: no log) and
    the same facts as a row of `recent` (the status page's ring), but for the page's own routes.
    Its polls (`/status.json`, every few seconds while it is open) are neither."""

    def __init__(self, app: Callable[..., Awaitable[None]], write: Callable[[str], None] | None,
                 recent: Recent | None = None) -> None:
        self.app = app
        self.write = write
        self.recent = recent
        self._refusals = _Refusals()

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
            suffix = self._refusals.suffix(status[0], clock) if 400 <= status[0] < 500 else ""
            if suffix is not None and scope.get("path") != status_routes.DATA:
                self._record(scope, started, status[0], time.monotonic() - clock, suffix)

    def _record(self, scope: Scope, started: float, status: int, seconds: float, suffix: str) -> None:
        known = scope.get(FACTS, {})
        if self.write is not None:
            self.write(line(started, scope.get("method", ""), scope.get("path", ""), status, seconds, known) + suffix)
        if self.recent is not None and scope.get("path") not in status_routes.ROUTES:
            model, method = known.get("model"), str(scope.get("method", ""))[:10]
            self.recent.add(time=started, endpoint=f"{method} {route(scope.get('path', ''))}",
                            model=model if isinstance(model, str) else None, status=status, ms=int(seconds * 1000),
                            input_tokens=known.get("input_tokens"), output_tokens=known.get("output_tokens"),
                            prewarmed=known.get("prewarmed"), idle=known.get("idle"))
