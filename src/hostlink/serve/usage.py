"""The Claude plan's usage on the endpoint: `GET /v1/usage`, the rate-limit headers on every
response, and the reset time in error bodies.

The headers are the ones the Anthropic API sends its own clients on a subscription
(`anthropic-ratelimit-unified-status`, `-reset`, `-representative-claim`, per window
`-5h-utilization` / `-5h-reset` …, `-overage-status` …), rebuilt from the last report the
`claude` CLI gave (`hostlink.claude_code.plan`), so a client that displays them does. A
streamed answer's headers go out before its own report arrives: they show the report before
it. A window whose reset has passed is left out (unknown until the next request). Under
`warn`, while requests draw on extra usage, `hostlink-extra-usage: in-use` says so.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from hostlink.claude_code import PlanGuard, PlanUsage, refusal, usage_as_json

PREFIX = "anthropic-ratelimit-unified-"
EXTRA_USAGE_HEADER = b"hostlink-extra-usage"
# The API's header name of each window (as Claude Code 2.1.332 reads them).
_WINDOW_HEADERS = {"five_hour": "5h", "seven_day": "7d", "seven_day_overage_included": "7d_oi", "overage": "overage"}
Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


def unified_headers(usage: PlanUsage | None, now: float | None = None) -> list[tuple[str, str]]:
    """The `anthropic-ratelimit-unified-*` headers for `usage` (none without a report)."""
    now = time.time() if now is None else now
    if usage is None:
        return []
    headers: list[tuple[str, str]] = []

    def add(name: str, value: object) -> None:
        if value is not None:
            headers.append((PREFIX + name, _number(value)))

    if usage.resets_at is None or usage.resets_at > now:
        add("status", usage.status)
        add("reset", usage.resets_at)
        add("representative-claim", usage.window)
    for window in usage.windows:
        short = _WINDOW_HEADERS.get(window.name)
        if short is None or (window.resets_at is not None and window.resets_at <= now):
            continue
        add(f"{short}-utilization", window.utilization)
        add(f"{short}-reset", window.resets_at)
        add(f"{short}-status", window.status)
        add(f"{short}-surpassed-threshold", window.surpassed_threshold)
    add("overage-status", usage.extra_usage_status)
    add("overage-reset", usage.extra_usage_resets_at)
    add("overage-disabled-reason", usage.extra_usage_disabled_reason)
    if usage.draws_extra_usage() and (usage.resets_at is None or usage.resets_at > now):
        add("overage-in-use", "true")
    return headers


def _number(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


class PlanHeaders:
    """ASGI middleware: the plan's headers on every HTTP response of the app it wraps."""

    def __init__(self, app: Callable[..., Awaitable[None]], guard: PlanGuard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), *self.headers()]
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def headers(self) -> list[tuple[bytes, bytes]]:
        latest = self.guard.latest()
        headers = [(name.encode(), value.encode()) for name, value in unified_headers(latest)]
        if self.guard.mode() == "warn" and refusal(latest) is not None:  # drawing on extra usage now
            headers.append((EXTRA_USAGE_HEADER, b"in-use"))
        return headers


def usage_route(guard: PlanGuard) -> Callable[[Request], Awaitable[JSONResponse]]:
    """`GET /v1/usage`: what `hostlink claude-code usage --json` shows, for this server."""

    async def usage(request: Request) -> JSONResponse:
        return JSONResponse(usage_as_json(guard.latest(), guard.mode()), headers={"cache-control": "no-store"})

    return usage


def with_reset(body: dict[str, Any], resets_at: int | None) -> dict[str, Any]:
    """An error body (either API's: its `error` object) with the time a limit lifts."""
    if resets_at is not None and isinstance(body.get("error"), dict):
        body["error"]["resets_at"] = resets_at
    return body
