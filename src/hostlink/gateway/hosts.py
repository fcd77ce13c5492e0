"""The MCP host connections of one gateway, and what each is told unasked.

List changes (after a reload or a sign-in) go to every connection that has made a request,
and resource updates to every connection subscribed. Nothing waits on a connection that does
not read its stream: each connection has an outbox, sent by a task of its own that exists
while something waits. What waits is bounded: a list change or an update of a URI already
waiting is coalesced into it (the update carries `_meta["hostlink/coalesced"]`, how many it
stands for beyond itself); updates of further URIs beyond `MAX_WAITING_URIS` are dropped
and counted (`_meta["hostlink/dropped"]` on the next one sent, and a notice on stderr).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hostlink.host import Notifier

MAX_WAITING_URIS = 64  # distinct resource updates waiting for one connection (URIs ≤ 2 KiB each)
COALESCED = "hostlink/coalesced"
DROPPED = "hostlink/dropped"


def host_connection(ctx: Any) -> Any:
    """The MCP host's connection a request came on. The SDK hands low-level handlers a
    per-request session only; its connection is what lasts, and its `exit_stack` is the
    SDK's per-connection teardown."""
    return ctx.session._connection


class Outbox:
    """What waits to be sent to one connection, and the one task sending it."""

    def __init__(self, connection: Any, notifier: Notifier) -> None:
        self._connection = connection
        self._notifier = notifier
        self._lists: set[str] = set()  # "tools", "resources", "prompts": their list changed
        self._updates: dict[str, int] = {}  # URI -> updates it stands for, oldest first
        self._dropped = 0  # not yet told to the host
        self._dropped_in_all = 0
        self._task: asyncio.Task[None] | None = None

    def list_changed(self, *kinds: str) -> None:
        self._lists.update(kinds)
        self._wake()

    def updated(self, uri: str) -> None:
        if uri in self._updates:
            self._updates[uri] += 1
        elif len(self._updates) < MAX_WAITING_URIS:
            self._updates[uri] = 1
        else:
            if not self._dropped_in_all:
                self._notifier.notify(f"an MCP host connection does not read its stream: resource updates beyond "
                                      f"{MAX_WAITING_URIS} waiting are dropped, and counted", "warning")
            self._dropped += 1
            self._dropped_in_all += 1
        self._wake()

    def _wake(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._send())

    async def _send(self) -> None:
        """Send until nothing waits (a connection that is gone drops what it is sent)."""
        try:
            while self._lists or self._updates:
                if self._lists:
                    kind = min(self._lists)
                    self._lists.discard(kind)
                    await self._connection.notify(f"notifications/{kind}/list_changed", None)
                    continue
                uri = next(iter(self._updates))
                count = self._updates.pop(uri)
                meta = {COALESCED: count - 1} if count > 1 else {}
                if self._dropped:
                    meta[DROPPED], self._dropped = self._dropped, 0
                await self._connection.send_resource_updated(uri, meta=meta or None)
        finally:
            self._task = None

    def close(self) -> None:
        """The connection ended: nothing more is sent; what was dropped is told on stderr."""
        if self._task is not None:
            self._task.cancel()
        if self._dropped_in_all:
            self._notifier.notify(f"{self._dropped_in_all} resource updates to an MCP host connection were "
                                  "dropped: it did not read them", "warning")


class Hosts:
    """The live MCP host connections that have made a request, each with its outbox."""

    def __init__(self, notifier: Notifier) -> None:
        self._notifier = notifier
        self._outboxes: dict[Any, Outbox] = {}

    def outbox(self, connection: Any) -> Outbox:
        """The connection's outbox, kept from its first request to its end."""
        outbox = self._outboxes.get(connection)
        if outbox is None:
            outbox = self._outboxes[connection] = Outbox(connection, self._notifier)
            connection.exit_stack.callback(self._ended, connection)
        return outbox

    def known(self, connection: Any) -> Outbox | None:
        """The outbox of a connection that has not ended, else None."""
        return self._outboxes.get(connection)

    def _ended(self, connection: Any) -> None:
        outbox = self._outboxes.pop(connection, None)
        if outbox is not None:
            outbox.close()

    def list_changed(self, *kinds: str) -> None:
        """Tell every connection that these lists changed."""
        for outbox in list(self._outboxes.values()):
            outbox.list_changed(*kinds)
