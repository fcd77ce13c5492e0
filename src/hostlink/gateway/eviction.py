"""The bound on open HTTP sessions evicts rather than refuses.

A host that restarts often and never sends DELETE (or a hostile one holding the key) would
otherwise fill the bound for the idle timeout and lock every other host out. When a new
session finds the bound reached, the least recently used idle session ends to make room:
idle is the SDK transport's own reading (no request in flight, no GET stream open: its idle
deadline is set), least recently used the earliest such deadline. Only when every session is
busy does the newcomer get the SDK's 503. The evicted host's next request gets the spec's
404 ("Session not found"), on which a host starts a new session.

The SDK decides admission in one synchronous step under its own lock; eviction runs in that
step (wrapping it), so two newcomers at once cannot both take the one place made.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    from hostlink.host import Notifier


def evict_when_full(manager: StreamableHTTPSessionManager, notifier: Notifier) -> None:
    """Make `manager` end its least recently used idle session when a new one finds it full."""
    admit = manager._admit_session
    bound = manager.max_sessions

    def admitting(requestor: Any) -> Any:
        if bound is not None and len(manager._server_instances) >= bound:
            _evict_one(manager, notifier, bound)
        return admit(requestor)

    manager._admit_session = admitting  # type: ignore[method-assign]  # the one admission step, see above


def _evict_one(manager: StreamableHTTPSessionManager, notifier: Notifier, bound: int) -> None:
    idle = [(scope.deadline, session) for session, transport in manager._server_instances.items()
            if (scope := transport.idle_scope) is not None and scope.deadline != math.inf]
    if not idle:
        return  # every session is busy: the newcomer gets 503
    _, session = min(idle)
    transport = manager._server_instances.pop(session)  # its id answers 404 from now on
    manager._session_owners.pop(session, None)
    assert transport.idle_scope is not None
    transport.idle_scope.cancel()  # ends its server task as the idle timeout would, which terminates it
    notifier.notify(f"{bound} MCP sessions were open: the least recently used idle one ended to make room "
                    "(its host starts a new one)")
