"""Roots (`"roots": true` per server): the session's working directory offered as the one root.

Off by default, as the seed has it: without the opt-in, or when the project is not trusted, the
SDK client gets no roots callback, so the capability is not even advertised. A server that
opted in asks `roots/list` and hears the directory as a `file://` URI. A session keeps its
directory for its whole life (no host moves it), so the one root never changes and no
`notifications/roots/list_changed` is ever needed.

A host that has roots of its own to offer (an MCP host behind `hostlink mcp serve`) gives
`offered`: what it answers at the moment of the request, when it answers, is the list.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hostlink.mcp.config.schema import ServerConfig


Offered = Callable[[], Awaitable["list[tuple[str, str | None]] | None"]]  # (URI, name) pairs, or None


class Roots:
    """The one root of a session: `directory` when its project is trusted, else None;
    `offered`: the host's own roots, asked at each request (None from it: the directory)."""

    def __init__(self, directory: Path | None, offered: Offered | None = None) -> None:
        self._directory = directory.resolve() if directory is not None else None
        self._offered = offered

    def callback(self, config: ServerConfig) -> Callable[[Any], Awaitable[Any]] | None:
        """The SDK's `list_roots_callback` for `config`, or None: no roots capability at all."""
        directory, offered = self._directory, self._offered
        if not config.roots or (directory is None and offered is None):
            return None

        async def list_roots(context: Any) -> Any:
            from mcp_types import ListRootsResult, Root

            hosts = await offered() if offered is not None else None
            if hosts is not None:
                return ListRootsResult(roots=[Root(uri=uri, name=name) for uri, name in hosts])
            mine = [Root(uri=directory.as_uri(), name=directory.name or None)] if directory is not None else []
            return ListRootsResult(roots=mine)

        return list_roots
