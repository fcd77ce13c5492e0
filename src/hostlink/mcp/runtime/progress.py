"""A tool call that asks for progress, and whose timeout every progress notification restarts.

`toolTimeoutMs` bounds how long a server may stay silent, not how long a tool may work:
a call that keeps reporting progress keeps running, up to a hard maximum, so a long job that
says how it is doing is not cut off at 60 s while a silent, stuck one still is. The SDK's own
read timeout never restarts, so it is switched off for the call (an infinite timeout arms no
timer) and this clock decides. The
host's `CallWatch` gets the progress and may set the timeout.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from contextlib import nullcontext
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import anyio

from hostlink.host.progress import current_watch
from hostlink.mcp.errors import RequestTimedOut

if TYPE_CHECKING:
    from mcp import Client

    from hostlink.mcp.runtime.server_log import ServerLog

MAX_CALL_SECONDS = 3600.0  # a call that keeps reporting progress ends here all the same
_SILENCE: ContextVar[anyio.CancelScope | None] = ContextVar("hostlink_call_silence", default=None)


def stop_silence_clock() -> None:
    """The call in this context is now a task with a bound of its own: silence no longer ends it."""
    scope = _SILENCE.get()
    if scope is not None:
        scope.deadline = math.inf


async def call_with_progress(client: Client, server: str, tool: str, arguments: dict[str, Any],
                             timeout_ms: int, max_seconds: float = MAX_CALL_SECONDS,
                             log: ServerLog | None = None, send: Callable[..., Awaitable[Any]] | None = None) -> Any:
    """`tools/call` with a progress token; progress goes to the watch's listener and restarts
    the wait (`timeout_ms`, or the watch's timeout), never past `max_seconds` in all. The
    server's log messages meanwhile go to the watch's log listener (through `log`). `send`
    stands in for `client.call_tool` (a call asked as a task, in the 2025-11-25 shape)."""
    watch = current_watch()
    idle = watch.timeout if watch.timeout is not None else timeout_ms / 1000
    limit = max(max_seconds, idle)
    started = anyio.current_time()
    progressed = False

    with anyio.CancelScope(deadline=started + idle) as scope:
        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            nonlocal progressed
            progressed = True
            if scope.deadline != math.inf:  # not once the call became a task (stop_silence_clock)
                scope.deadline = min(anyio.current_time() + idle, started + limit)
            if watch.listener is not None:
                watch.listener(progress, total, message)

        token = _SILENCE.set(scope)
        try:
            with log.during(watch) if log is not None else nullcontext() as meta:
                return await (send or client.call_tool)(tool, arguments, read_timeout_seconds=math.inf,
                                                        progress_callback=on_progress, meta=meta)
        finally:
            _SILENCE.reset(token)
    if anyio.current_time() >= started + limit:
        raise RequestTimedOut(f"MCP server {server!r} kept reporting progress but did not finish the call of tool "
                              f"{tool!r} within {limit:g} s, the most a call may take")
    silence = "reported no progress and did not answer" if progressed else "did not answer"
    given = (f"{idle:g} s (the timeout this call was given" if watch.timeout is not None
             else f"{timeout_ms} ms (its toolTimeoutMs")
    raise RequestTimedOut(f"MCP server {server!r} {silence} the call of tool {tool!r} within {given}; "
                          "each progress notification restarts the wait)")
