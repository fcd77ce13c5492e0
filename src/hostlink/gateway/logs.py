"""The upstream servers' log messages to the MCP host (`notifications/message`).

An MCP host that asks for log messages — `logging/setLevel` on its connection, or on protocol
2026-07-28 the level in a request's `_meta` — gets those an upstream server sends during its
tool calls, at or above that level, as notifications of the call's own request (see
`hostlink.mcp.runtime.server_log` for how a message finds its call). A host that never asked
gets none. The logger names the server (`<server>` or `<server>/<logger>`); the data is the
server's, so it goes as one sanitized, bounded text: a string as it is, anything else as its
compact JSON.
"""

from __future__ import annotations

from typing import Any
from weakref import WeakKeyDictionary

from hostlink.gateway.hosts import host_connection
from hostlink.host.output import compact_json, one_line, strip_controls
from hostlink.host.progress import LOG_LEVELS

DATA_CHARS = 2000
LOGGER_CHARS = 100


class HostLogs:
    """The log level each MCP host connection set; the relay of one log message."""

    def __init__(self) -> None:
        self._levels: WeakKeyDictionary[Any, str] = WeakKeyDictionary()

    async def set_level(self, ctx: Any, params: Any) -> Any:
        """`logging/setLevel`: this connection's calls get upstream log messages from now on."""
        import mcp_types

        self._levels[host_connection(ctx)] = params.level
        return mcp_types.EmptyResult()

    def level(self, ctx: Any) -> str | None:
        """The lowest level the MCP host wants for request `ctx`, or None for no log messages."""
        from mcp_types import LOG_LEVEL_META_KEY

        meta = ctx.meta if isinstance(ctx.meta, dict) else {}
        asked = meta.get(LOG_LEVEL_META_KEY)
        if asked in LOG_LEVELS:
            return str(asked)
        try:
            return self._levels.get(host_connection(ctx))
        except (AttributeError, TypeError):  # a session without a lasting connection
            return None

    @staticmethod
    async def send(ctx: Any, server: str, level: str, logger: str | None, data: Any) -> None:
        """One upstream log message to the MCP host, as a notification of request `ctx`."""
        import mcp_types

        text = strip_controls(data if isinstance(data, str) else compact_json(data))
        if len(text) > DATA_CHARS:
            text = text[: DATA_CHARS - 1] + "…"
        named = f"{server}/{one_line(logger, LOGGER_CHARS)}" if logger and one_line(logger, LOGGER_CHARS) else server
        params = mcp_types.LoggingMessageNotificationParams(level=level, logger=named, data=text)
        try:
            await ctx.session.send_notification(
                mcp_types.LoggingMessageNotification(params=params), related_request_id=ctx.request_id)
        except Exception:  # noqa: BLE001 - a host gone mid-call misses the rest of the log
            pass
