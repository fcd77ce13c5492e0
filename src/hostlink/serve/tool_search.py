"""Tool search on `/v1/messages`, as the Messages API defines it: a tool sent with
`defer_loading: true` is not offered to Claude until a `tool_reference` block in a tool
result names it; from then on it is, so what Claude can propose is exactly what was loaded.

What clients send (measured): Claude Code 2.1.332 with `ENABLE_TOOL_SEARCH` offers its own
client-side `ToolSearch` tool and a deferred `DeferredToolPlaceholder`, the MCP tools only by
name in a system reminder; when Claude calls `ToolSearch` it answers with `tool_reference`
blocks in the tool result and sends each found tool, still deferred, in every later request.
The API's server-side search tools (`tool_search_tool_regex_*`, `tool_search_tool_bm25_*`)
are run by the API itself within one response; Claude Code never sends them, and hostlink,
which answers a request with one turn of Claude's, refuses them by name.

A `tool_reference` reaches Claude as a short text that depends on the name alone, so a
conversation's earlier records stay byte-identical (and cached) as it goes on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hostlink.host import TextContent, ToolDefinition
from hostlink.serve.core import field, invalid

_SERVER_SEARCH = ("tool_search_tool_regex", "tool_search_tool_bm25")


def refuse_server_search(kind: Any, path: str) -> None:
    """A 400 naming the API's server-side search tool, which hostlink cannot run."""
    if isinstance(kind, str) and kind.startswith(_SERVER_SEARCH):
        raise invalid(f"{path}.type", f"hostlink serve cannot run the API's server-side tool search ({kind[:40]}): "
                                      "offer a tool of your own that searches and answers with tool_reference blocks "
                                      "(as Claude Code's ToolSearch does), or send the tools without defer_loading")


def reference(block: Mapping[str, Any], path: str, references: dict[str, str]) -> TextContent:
    """A `tool_reference` in a tool result: noted in `references` (name -> path), and what
    Claude reads of it."""
    name = field(block, "tool_name", str, path, required=True)
    references.setdefault(name, path)
    return TextContent(f"Tool loaded: {name}")


def offered(tools: Sequence[tuple[ToolDefinition, bool]], references: Mapping[str, str]) -> list[ToolDefinition]:
    """The tools Claude is offered: each one not deferred, and each deferred one a
    `tool_reference` named. A reference must name one of the request's tools."""
    if tools and all(deferred for _, deferred in tools):
        raise invalid("tools", "every tool has defer_loading: true, so Claude could call none of them; "
                               "send at least one (the tool that searches the others) without it")
    names = {tool.name for tool, _ in tools}
    for name, path in references.items():
        if name not in names:
            raise invalid(f"{path}.tool_name", "names no tool of the request's tools")
    return [tool for tool, deferred in tools if not deferred or tool.name in references]
