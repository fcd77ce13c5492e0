"""A connection's tool listing: one `tools/list` in flight at a time, refreshed on change.

A server says its lists changed with `notifications/*/list_changed` (spontaneously up to
protocol 2025-11-25; on 2026-07-28 only on a `subscriptions/listen` stream, which is
opened here when the server offers it). A tools notice refreshes the listing in the
background, coalesced: notices that arrive while a listing is in flight cost one more
listing after it, never one each, and calls in flight are never touched. The runtime keeps
no resource or prompt list (those are fetched per request), so their notices need nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from hostlink.mcp.errors import CallFailed, ConnectFailed
from hostlink.mcp.runtime.filters import filter_tools

if TYPE_CHECKING:
    from mcp import Client

TOOLS_PAGE_CAP = 50  # pages of tools/list per listing; a paginator that never ends cannot hang us
TOOLS_CHANGED = "notifications/tools/list_changed"
LIST_PAGE_CAP = 50  # pages of a resources, templates or prompts listing, fetched per request


async def every_page(list_page: Callable[[str | None], Awaitable[Any]], server: str, attribute: str) -> list[Any]:
    """Every item (`attribute` of each page) of a listing `list_page(cursor)` gives page by page:
    the one paginator of the listings hostlink does not keep, bounded, so that a server whose
    cursor never ends cannot hang its caller."""
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(LIST_PAGE_CAP):
        page = await list_page(cursor)
        items.extend(getattr(page, attribute))
        cursor = page.next_cursor
        if cursor is None:
            return items
    raise CallFailed(f"MCP server {server!r} listed more than {LIST_PAGE_CAP} pages of {attribute.replace('_', ' ')}")


class Flight:
    """One shared in-flight listing; every waiter gets the same tools or error."""

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.result: tuple[Any, ...] | None = None
        self.error: BaseException | None = None

    async def wait(self) -> tuple[Any, ...]:
        await self.done.wait()
        if self.error is not None:
            raise self.error
        assert self.result is not None  # the fetch sets its result or an error before it is done
        return self.result


Page = Callable[[str | None], Awaitable[Any]]  # one tools/list page by cursor
Publish = Callable[[tuple[Any, ...], tuple[int, int]], None]


class ToolLister:
    """The listing of one connection; `page` sends one request, `publish` records a
    complete filtered listing, `on_change` hears a tools notice (it drops a cache).

    It keeps the listing in flight, how many tools notices it has seen, and the notice count
    the published listing started after (a listing older than a notice is stale)."""

    def __init__(self, name: str, config: Any, group: anyio.abc.TaskGroup, page: Page, publish: Publish,
                 on_change: Callable[[], None]) -> None:
        self.name, self.config, self.group = name, config, group
        self._page, self._publish, self._on_change = page, publish, on_change
        self.tools: tuple[Any, ...] | None = None
        self.flight: Flight | None = None
        self.changes = 0
        self.listed = -1
        self.listeners: list[Callable[[str, Any], Awaitable[None]]] = []  # hear every notice (the runtime's list)

    async def tools_now(self, refresh: bool) -> tuple[Any, ...]:
        """The listing: the published one when `refresh` is False and no notice made it
        stale, else the one in flight (or a new one) that started after every notice seen."""
        wanted = self.changes
        if not refresh and self.tools is not None and self.listed >= wanted:
            return self.tools
        while True:
            result = await self._current_flight().wait()
            if self.listed >= wanted:
                return result

    def _current_flight(self) -> Flight:
        """The listing in flight, or a new one started now."""
        flight = self.flight
        if flight is None:
            flight = self.flight = Flight()
            try:
                self.group.start_soon(self._fetch, flight)
            except RuntimeError:  # the owner's group has just closed
                self.flight = None
                raise ConnectFailed(f"MCP server {self.name!r} is disconnecting") from None
        return flight

    async def _fetch(self, flight: Flight) -> None:
        started = self.changes
        try:
            tools: list[Any] = []
            cursor: str | None = None
            for _ in range(TOOLS_PAGE_CAP):
                page = await self._page(cursor)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if cursor is None:
                    break
            else:
                raise CallFailed(f"MCP server {self.name!r} listed more than {TOOLS_PAGE_CAP} pages of tools")
            flight.result, filtered = filter_tools(self.config, tools)
            if started >= self.listed:
                self.tools, self.listed = flight.result, started
                self._publish(flight.result, filtered)
        except Exception as exc:  # noqa: BLE001 - handed to every waiter
            flight.error = exc
        finally:
            if flight.result is None and flight.error is None:  # cancelled: the connection closed
                flight.error = ConnectFailed(f"MCP server {self.name!r} closed while its tools were listed")
            self.flight = None
            flight.done.set()
        if self.changes > started and flight.error is None:
            self._refresh()  # notices came meanwhile: one more listing covers them all

    async def on_message(self, message: Any) -> None:
        """The SDK's message handler: a tools notice marks the listing stale and refreshes
        it in the background; it never waits, so the SDK's reader goes on at once (the SDK runs
        each notice in a task of its own, where `listeners` hear it: resource updates)."""
        for listener in list(self.listeners):
            await listener(self.name, message)
        if getattr(message, "method", None) != TOOLS_CHANGED:
            return
        self.changes += 1
        self._on_change()
        if self.tools is not None and self.flight is None:
            self._refresh()

    def _refresh(self) -> None:
        try:
            self._current_flight()
        except ConnectFailed:
            pass  # closing: nothing left to refresh


async def watch_changes(client: Client, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
                        ) -> None:
    """Hold a `subscriptions/listen` stream open on a 2026-07-28 connection whose server
    offers list-changed events (started once the server acknowledged it, so setup ends with
    the stream in place); the SDK hands each event to the message handler too. A server
    that refuses or drops the stream stays usable (its listings just never refresh)."""
    caps = client.server_capabilities
    wanted = {kind: bool(getattr(getattr(caps, kind, None), "list_changed", False))
              for kind in ("tools", "prompts", "resources")}
    listening = False
    try:
        if any(wanted.values()):
            async with client.listen(tools_list_changed=wanted["tools"], prompts_list_changed=wanted["prompts"],
                                     resources_list_changed=wanted["resources"]) as subscription:
                task_status.started()
                listening = True
                async for _ in subscription:
                    pass
    except Exception:  # noqa: BLE001 - the stream is a convenience, never a failure of the connection
        pass
    if not listening:
        task_status.started()
