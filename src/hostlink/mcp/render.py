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
    from hostlink.mcp.runtime import McpRuntime, Snapshot
    from hostlink.mcp.schema import ServerConfig


def model_visible(tool: Any) -> bool:
    """False for tools whose ``_meta.ui.visibility`` leaves out the model (MCP Apps)."""
    meta = tool.meta or {}
    ui = meta.get("ui") if isinstance(meta, Mapping) else None
    visibility = ui.get("visibility") if isinstance(ui, Mapping) else None
    if visibility is None:
        return True
    return isinstance(visibility, list) and "model" in visibility


def transport_of(config: ServerConfig) -> str:
    return config.transport


def snapshot_line(snapshot: Snapshot, *, for_model: bool = False) -> str:
    """``name: state (protocol …, server name version, N tools): error`` for people;
    ``name: state, transport, protocol …, tools: N, error: …`` for the model."""
    tools = None if snapshot.tools is None else sum(1 for tool in snapshot.tools if model_visible(tool))
    if for_model:
        parts = [f"{snapshot.server}: {snapshot.state}", snapshot.transport]
        parts += [f"protocol {snapshot.protocol_version}"] if snapshot.protocol_version else []
        parts += [f"tools: {tools}"] if tools is not None else []
        parts += [f"error: {snapshot.error}"] if snapshot.error is not None else []
        return ", ".join(parts)
    details = []
    if snapshot.protocol_version:
        details.append(f"protocol {snapshot.protocol_version}")
    if snapshot.server_name:
        details.append(one_line(f"{snapshot.server_name} {snapshot.server_version or ''}", 60))
    if tools is not None:
        details.append(f"{tools} tools")
    line = f"{snapshot.server}: {snapshot.state}"
    if details:
        line += f" ({', '.join(details)})"
    if snapshot.error is not None:
        line += f": {one_line(str(snapshot.error), 300)}"
    return line


def status_lines(runtime: McpRuntime, names: Sequence[str] | None = None, *, for_model: bool = False) -> list[str]:
    """One line a server (``names``, default every configured one), never connecting: a
    disabled server says so, an unknown one raises ServerNotFound."""
    names = sorted(runtime.servers) if names is None else names
    if not names:
        return ["no MCP servers are configured"]
    lines = []
    for name in names:
        config = runtime.servers.get(name)
        if config is not None and config.disabled:
            lines.append(f"{name}: disabled")
        else:
            lines.append(snapshot_line(runtime.snapshot(name), for_model=for_model))
    return lines


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
