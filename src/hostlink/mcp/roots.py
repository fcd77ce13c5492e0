"""Roots (``"roots": true`` per server): the session's working directory offered as the one root.

Off by default, as the seed has it: without the opt-in, or when the project is not trusted, the
SDK client gets no roots callback, so the capability is not even advertised. A server that
opted in asks ``roots/list`` and hears the directory as a ``file://`` URI. When the host moves
the session to another directory (or to one it does not trust: then there is no root), each
connected server that was offered roots is told (``notifications/roots/list_changed``) and
asks again.
"""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp import Client

    from hostlink.mcp.schema import ServerConfig


class Roots:
    """The one root of a session: ``directory`` when its project is trusted, else None.

    Whether roots are offered at all is decided once, at session start (a trusted project).
    """

    def __init__(self, directory: Path | None) -> None:
        self._offered = directory is not None
        self._directory = directory.resolve() if directory is not None else None

    def callback(self, config: ServerConfig) -> Callable[[Any], Awaitable[Any]] | None:
        """The SDK's ``list_roots_callback`` for ``config``, or None: no roots capability at all."""
        if not config.roots or not self._offered:
            return None

        async def list_roots(context: Any) -> Any:
            from mcp_types import ListRootsResult, Root

            directory = self._directory
            return ListRootsResult(roots=[] if directory is None else
                                   [Root(uri=directory.as_uri(), name=directory.name or None)])

        return list_roots

    async def move(self, directory: Path | None, offered: Iterable[Client]) -> None:
        """The session is now in ``directory`` (None: one the host does not trust); the clients
        that offered roots (``offered``) tell their servers. Nothing moves where none was offered."""
        moved = directory.resolve() if directory is not None else None
        if not self._offered or moved == self._directory:
            return
        self._directory = moved
        for client in offered:
            try:
                with warnings.catch_warnings():  # the SDK marks roots deprecated from 2026-07-28 on
                    warnings.simplefilter("ignore")
                    await client.send_roots_list_changed()
            except Exception:  # noqa: BLE001 - a closing connection misses the news, the others still hear it
                continue
