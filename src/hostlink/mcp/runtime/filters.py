"""A server's `includeTools` / `excludeTools`: which of its tools exist for the host.

Applied where the runtime receives a listing, so a filtered tool is never listed, searched,
described to the model or called (a call of it fails as for any tool the server lacks).
Patterns are exact names or globs, matched case-sensitively.
"""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hostlink.mcp.config.schema import ServerConfig


def hidden_by(config: ServerConfig, name: str) -> str | None:
    """`"includeTools"` when the tool matches none of them, `"excludeTools"` when it
    matches one of those, else None (kept)."""
    if config.include_tools is not None and not any(fnmatchcase(name, p) for p in config.include_tools):
        return "includeTools"
    if any(fnmatchcase(name, p) for p in config.exclude_tools):
        return "excludeTools"
    return None


def filter_tools(config: ServerConfig, tools: Sequence[Any]) -> tuple[tuple[Any, ...], tuple[int, int]]:
    """The kept tools (MCP `Tool` objects), and how many includeTools and excludeTools hid."""
    kept: list[Any] = []
    hidden = {"includeTools": 0, "excludeTools": 0}
    for tool in tools:
        reason = hidden_by(config, tool.name)
        if reason is None:
            kept.append(tool)
        else:
            hidden[reason] += 1
    return tuple(kept), (hidden["includeTools"], hidden["excludeTools"])
