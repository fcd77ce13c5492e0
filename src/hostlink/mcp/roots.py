"""Roots (``"roots": true`` per server): the session's working directory offered as the one root.

Off by default, as the seed has it: without the opt-in, or when the project is not trusted, the
SDK client gets no roots callback, so the capability is not even advertised. A server that
opted in asks ``roots/list`` and hears the directory as a ``file://`` URI. A session keeps its
directory for its whole life (no host moves it), so the one root never changes and no
``notifications/roots/list_changed`` is ever needed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hostlink.mcp.schema import ServerConfig


class Roots:
    """The one root of a session: ``directory`` when its project is trusted, else None."""

    def __init__(self, directory: Path | None) -> None:
        self._directory = directory.resolve() if directory is not None else None

    def callback(self, config: ServerConfig) -> Callable[[Any], Awaitable[Any]] | None:
        """The SDK's ``list_roots_callback`` for ``config``, or None: no roots capability at all."""
        directory = self._directory
        if not config.roots or directory is None:
            return None

        async def list_roots(context: Any) -> Any:
            from mcp_types import ListRootsResult, Root

            return ListRootsResult(roots=[Root(uri=directory.as_uri(), name=directory.name or None)])

        return list_roots
