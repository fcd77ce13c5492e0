"""Resource subscriptions at upstream servers, for a host that relays them (the gateway).

A server that offers them (`resources.subscribe` in its capabilities) is asked with
`resources/subscribe` on a handshake-era connection, or with a `subscriptions/listen`
stream for the URI on a 2026-07-28 one (where `resources/subscribe` no longer exists, and
the stream lives in the connection's own task group). Either way the server's
`notifications/resources/updated` reach the runtime's message handler, and from there
`on_update(server, uri)`. One upstream subscription per (server, URI), kept with the
client it was made on: a connection that was replaced has forgotten it, so it is made again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from hostlink.mcp.errors import CallFailed

if TYPE_CHECKING:
    from mcp import Client

    from hostlink.mcp.runtime.clients import McpRuntime

UPDATED = "notifications/resources/updated"


@dataclass
class _Held:
    client: Any  # the connection's client it was made on
    stream: anyio.CancelScope | None  # a 2026-07-28 listen stream; None: resources/subscribe


class ResourceSubscriptions:
    """The upstream subscriptions of one runtime; `on_update` hears each server's updates."""

    def __init__(self, runtime: McpRuntime, on_update: Callable[[str, str], Awaitable[None]]) -> None:
        self._runtime = runtime
        self._on_update = on_update
        self._held: dict[tuple[str, str], _Held] = {}
        runtime.notice_listeners.append(self._heard)

    async def subscribe(self, server: str, uri: str) -> None:
        """Subscribe at `server` (once); CallFailed naming it when it offers no subscriptions."""

        async def work(client: Client, group: anyio.abc.TaskGroup) -> None:
            held = self._held.get((server, uri))
            if held is not None and held.client is client:
                return
            self._held.pop((server, uri), None)  # made on a connection since replaced
            resources = getattr(client.server_capabilities, "resources", None)
            if not getattr(resources, "subscribe", False):
                raise CallFailed(f"MCP server {server!r} does not offer resource subscriptions")
            from hostlink.mcp.transports import MODERN_VERSION

            if client.protocol_version == MODERN_VERSION:
                held = _Held(client, anyio.CancelScope())
                await group.start(self._listen, server, uri, held)
            else:
                import mcp_types

                await client.session.send_request(
                    mcp_types.SubscribeRequest(params=mcp_types.SubscribeRequestParams(uri=uri)), mcp_types.EmptyResult)
                self._held[(server, uri)] = _Held(client, None)

        await self._runtime.on_client(server, "resources/subscribe", work)

    async def unsubscribe(self, server: str, uri: str) -> None:
        """Undo a subscription; one made on a connection since replaced is just forgotten."""
        held = self._held.pop((server, uri), None)
        if held is None:
            return
        if held.stream is not None:
            held.stream.cancel()
            return

        async def work(client: Client, group: anyio.abc.TaskGroup) -> None:
            import mcp_types

            if held.client is client:
                await client.session.send_request(
                    mcp_types.UnsubscribeRequest(params=mcp_types.UnsubscribeRequestParams(uri=uri)),
                    mcp_types.EmptyResult)

        if self._runtime.snapshot(server).state == "connected":  # a closed connection has forgotten it
            await self._runtime.on_client(server, "resources/unsubscribe", work)

    async def _listen(self, server: str, uri: str, held: _Held, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        """Hold a listen stream for `uri` until it is cancelled, ends or the connection closes
        (its events reach the message handler too); a refusal before it starts is raised."""
        from mcp import MCPError

        from hostlink.host.output import one_line

        assert held.stream is not None
        started = False
        with held.stream:
            try:
                async with held.client.listen(resource_subscriptions=[uri]) as stream:
                    if uri not in (stream.honored.resource_subscriptions or ()):
                        raise CallFailed(f"MCP server {server!r} did not accept a subscription to this resource")
                    self._held[(server, uri)] = held
                    task_status.started()
                    started = True
                    async for _ in stream:
                        pass
            except MCPError as error:
                if not started:
                    raise CallFailed(f"MCP server {server!r} rejected the subscription: "
                                     f"{one_line(error.message, 300)}") from None
            except (RuntimeError, TimeoutError) as error:  # the stream was lost (or never acknowledged)
                if not started:
                    raise CallFailed(f"MCP server {server!r}: the subscription failed ({type(error).__name__})"
                                     ) from None
            finally:
                if self._held.get((server, uri)) is held:
                    del self._held[(server, uri)]

    async def _heard(self, server: str, message: Any) -> None:
        if getattr(message, "method", None) == UPDATED:
            await self._on_update(server, str(message.params.uri))
