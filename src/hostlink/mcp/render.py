"""Compact one-line summaries for people (terminal, host commands).

Schemas and full results stay in the agent's content; here every server-supplied string is
sanitized and shortened, so a line stays one line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hostlink.host.output import one_line

if TYPE_CHECKING:
    from hostlink.host import ToolResult
    from hostlink.mcp.runtime import Snapshot
    from hostlink.mcp.schema import ServerConfig


def transport_of(config: ServerConfig) -> str:
    return "http" if hasattr(config, "url") else "stdio"


def snapshot_line(snapshot: Snapshot) -> str:
    """``name: state (protocol …, server name version, N tools)`` or the latched error."""
    details = []
    if snapshot.protocol_version:
        details.append(f"protocol {snapshot.protocol_version}")
    if snapshot.server_name:
        details.append(one_line(f"{snapshot.server_name} {snapshot.server_version or ''}", 60))
    if snapshot.tools is not None:
        from hostlink.mcp.tool import model_visible

        details.append(f"{sum(1 for tool in snapshot.tools if model_visible(tool))} tools")
    line = f"{snapshot.server}: {snapshot.state}"
    if details:
        line += f" ({', '.join(details)})"
    if snapshot.error is not None:
        line += f": {one_line(str(snapshot.error), 300)}"
    return line


def status_rows(servers: dict[str, ServerConfig], sources: dict[str, Any],
                credentials: dict[str, str]) -> list[list[str]]:
    """Rows of the status table: name, source, transport, enabled, credentials."""
    rows = [["NAME", "SOURCE", "TRANSPORT", "DISABLED", "CREDENTIALS"]]
    for name in sorted(servers):
        config = servers[name]
        rows.append([name, str(sources.get(name, "-")), transport_of(config),
                     "yes" if config.disabled else "no", credentials.get(name, "-")])
    return rows


def table(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows)


def tool_line(tool: Any) -> str:
    return f"{one_line(tool.name, 64)}  {one_line(tool.description, 120)}".rstrip()


def summary(args: Mapping[str, Any], result: ToolResult) -> str:
    """``mcp call fx/echo: ok, 1 text (5 chars)`` — one line for a host's display of a call."""
    target = "/".join(one_line(str(args[key]), 64) for key in ("server", "tool") if args.get(key))
    texts = [item for item in result.content if getattr(item, "type", "") == "text"]
    images = len(result.content) - len(texts)
    parts = ["error" if result.is_error else "ok"]
    if texts:
        parts.append(f"{len(texts)} text ({sum(len(t.text) for t in texts)} chars)")
    if images:
        parts.append(f"{images} image{'s' if images != 1 else ''}")
    return f"mcp {one_line(str(args.get('action', '')), 16)} {target}".rstrip() + ": " + ", ".join(parts)
