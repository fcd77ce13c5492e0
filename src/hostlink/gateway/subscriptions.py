"""The MCP hosts' resource subscriptions (tools face).

`resources/subscribe` of `hostlink://<server>/<uri>` subscribes at that server once,
however many host connections ask (`hostlink.mcp.runtime.subscriptions`); each update the
server sends goes to every host connection subscribed to it, under the prefixed URI, through
that connection's outbox (`hostlink.gateway.hosts`: a connection that does not read holds up
nobody, and what waits for it is bounded).
`resources/unsubscribe` undoes a connection's subscription, and a connection's end drops
all of its own; the upstream subscription ends when no connection is left on it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio

from hostlink.gateway.naming import prefixed_uri
from hostlink.gateway.tools_face import MAX_URI_CHARS
from hostlink.mcp import McpError

if TYPE_CHECKING:
    from hostlink.gateway.hosts import Hosts
    from hostlink.mcp import McpRuntime, ResourceSubscriptions


class HostSubscriptions:
    """Which host connections follow which (server, URI); changes one at a time. A
    connection's subscriptions are dropped in its `exit_stack` (the SDK's per-connection
    teardown)."""

    def __init__(self, hosts: Hosts) -> None:
        self._outboxes = hosts
        self._upstream: ResourceSubscriptions | None = None
        self._runtime: McpRuntime | None = None
        self._hosts: dict[tuple[str, str], list[Any]] = {}
        self._watched: list[Any] = []  # connections whose end is hooked
        self._lock = anyio.Lock()

    def _at(self, runtime: McpRuntime) -> ResourceSubscriptions:
        from hostlink.mcp import ResourceSubscriptions

        if self._upstream is None or self._runtime is not runtime:  # a new session's runtime
            self._upstream, self._runtime, self._hosts = ResourceSubscriptions(runtime, self._updated), runtime, {}
        return self._upstream

    async def add(self, connection: Any, runtime: McpRuntime, server: str, uri: str) -> None:
        """Subscribe `connection`; upstream first (again, when its connection was replaced)."""
        async with self._lock:
            await self._at(runtime).subscribe(server, uri)
            hosts = self._hosts.setdefault((server, uri), [])
            if connection not in hosts:
                hosts.append(connection)
            if connection not in self._watched:
                self._watched.append(connection)
                connection.exit_stack.push_async_callback(self.drop, connection)

    async def remove(self, connection: Any, runtime: McpRuntime, server: str, uri: str) -> None:
        async with self._lock:
            await self._leave(connection, self._at(runtime), (server, uri))

    async def drop(self, connection: Any) -> None:
        """A host connection ended: its subscriptions go, and upstream ones nobody else follows."""
        async with self._lock:
            if connection in self._watched:
                self._watched.remove(connection)
            if self._upstream is not None:
                for key in [key for key, hosts in self._hosts.items() if connection in hosts]:
                    try:
                        await self._leave(connection, self._upstream, key)
                    except McpError:
                        pass  # the server is gone or refused: nobody follows it here any more

    async def _leave(self, connection: Any, upstream: ResourceSubscriptions, key: tuple[str, str]) -> None:
        hosts = self._hosts.get(key, [])
        if connection in hosts:
            hosts.remove(connection)
        if not hosts and self._hosts.pop(key, None) is not None:
            await upstream.unsubscribe(*key)

    async def _updated(self, server: str, uri: str) -> None:
        """An update from `server`: into the outbox of each connection following that URI (or
        one it is a sub-resource of), under the prefixed URI; a URI that is not plain text is
        not passed. Nothing here waits for a connection."""
        if len(uri) > MAX_URI_CHARS or not uri.isprintable():
            return
        told: list[Any] = []
        for (owner, followed), hosts in list(self._hosts.items()):
            if owner == server and (uri == followed or uri.startswith(followed.rstrip("/") + "/")):
                told.extend(connection for connection in hosts if connection not in told)
        for connection in told:
            outbox = self._outboxes.known(connection)
            if outbox is not None:
                outbox.updated(prefixed_uri(server, uri))
