"""A server's log messages (MCP `notifications/message`) to the host call that caused them.

A log message names no request, so it goes to the newest call in flight on that server whose
host wants log messages (its `CallWatch.log`), at or above the level that host asked for; a
message no call wants is dropped — the model never sees log content. On protocol 2026-07-28 a
server sends log messages only for a request that opts in with a level in its `_meta`: a
watched call carries its host's level; on older protocols the server sends what it likes and
the level is applied here.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

from hostlink.host.progress import LOG_LEVELS, CallWatch

if TYPE_CHECKING:
    from mcp_types import RequestParamsMeta


class ServerLog:
    """One connection's calls that want its log messages; the SDK client's logging callback."""

    def __init__(self, server: str) -> None:
        self._server = server
        self._calls: list[CallWatch] = []

    @contextmanager
    def during(self, watch: CallWatch) -> Iterator[RequestParamsMeta | None]:
        """While a call runs: its watch hears the server's log messages; yields the `_meta`
        that opts the request in (None when the watch wants none)."""
        from mcp_types import LOG_LEVEL_META_KEY

        if watch.log is None or watch.log_level not in LOG_LEVELS:
            yield None
            return
        self._calls.append(watch)
        try:
            yield cast("RequestParamsMeta", {LOG_LEVEL_META_KEY: watch.log_level})
        finally:
            self._calls.remove(watch)

    async def __call__(self, params: Any) -> None:
        if not self._calls or params.level not in LOG_LEVELS:
            return
        watch = self._calls[-1]
        if watch.log is not None and LOG_LEVELS.index(params.level) >= LOG_LEVELS.index(watch.log_level):
            watch.log(self._server, params.level, params.logger, params.data)
