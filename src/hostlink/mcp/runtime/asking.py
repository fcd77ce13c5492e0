"""Which server's request (elicitation, sampling, roots) the current task is answering.

The SDK runs a server's requests in tasks of its own, not in the task of the call that caused
them. A host with several people behind it (the gateway: one MCP host per session) sends each
request only to the one whose call is with the server that asks, so it needs to know which
server that is; every request callback of a server runs with its name set here.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

_ASKING: ContextVar[str | None] = ContextVar("hostlink_mcp_asking", default=None)


def asking_server() -> str | None:
    """The server whose request the current task answers; None outside such a request."""
    return _ASKING.get()


def asked_by(server: str, callback: Any) -> Any:
    """The SDK request callback `callback` (or None) run with `server` as the asking one."""
    if callback is None:
        return None

    async def answer(*args: Any) -> Any:
        token = _ASKING.set(server)
        try:
            return await callback(*args)
        finally:
            _ASKING.reset(token)

    return answer
