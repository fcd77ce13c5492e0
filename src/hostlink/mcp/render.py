"""Compact one-line summaries for people (terminal, host commands).

Schemas and full results stay in the agent's content; here every server-supplied string is
sanitized and shortened, so a line stays one line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hostlink.host import TextContent
from hostlink.host.output import compact_json, counted, one_line
from hostlink.mcp.runtime.visibility import model_visible, needs_task, task_mark

if TYPE_CHECKING:
    from hostlink.host import ToolResult
    from hostlink.mcp.config.schema import ServerConfig
    from hostlink.mcp.runtime.clients import McpRuntime
    from hostlink.mcp.runtime.snapshot import Snapshot


def parameters_line(schema: Any) -> str:
    """`message (string, required), count (integer)`: a tool's parameters from its input
    schema, bounded, for an argument error."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping) or not properties:
        return "(none)"
    required = schema.get("required") if isinstance(schema.get("required"), list) else []
    parts = []
    for key, spec in list(properties.items())[:PARAMETERS_SHOWN]:
        kind = one_line(type_of(spec), TYPE_CHARS)
        parts.append(f"{one_line(str(key), 64)} ({kind}{', required' if key in required else ''})")
    more = len(properties) - PARAMETERS_SHOWN
    return ", ".join(parts) + (f", and {more} more" if more > 0 else "")


PARAMETERS_SHOWN = 30
TYPE_CHARS = 80  # of one parameter's type
ENUM_SHOWN = 6  # values of an enum


def type_of(spec: Any, depth: int = 0) -> str:
    """A JSON Schema's type as people write it: `string | null`, `array of string`,
    `one of "fast", "full"`, a `$ref`'s name; `any` when it says nothing."""
    if not isinstance(spec, Mapping) or depth > 3:
        return "any"
    if isinstance(spec.get("enum"), list):
        values = [compact_json(value) for value in spec["enum"][:ENUM_SHOWN]]
        return "one of " + ", ".join(values) + (", …" if len(spec["enum"]) > ENUM_SHOWN else "")
    if "const" in spec:
        return compact_json(spec["const"])
    for union in ("anyOf", "oneOf"):
        if isinstance(spec.get(union), list) and spec[union]:
            return " | ".join(dict.fromkeys(type_of(option, depth + 1) for option in spec[union]))
    kind = spec.get("type")
    if isinstance(kind, list) and kind:
        return " | ".join(type_of({**spec, "type": each}, depth + 1) for each in kind)
    if kind == "array":
        return f"array of {type_of(spec['items'], depth + 1)}" if isinstance(spec.get("items"), Mapping) else "array"
    if isinstance(kind, str):
        return kind
    if isinstance(spec.get("$ref"), str):
        return spec["$ref"].rsplit("/", 1)[-1] or "any"
    return "any"


def transport_of(config: ServerConfig) -> str:
    return config.transport


def reconnected(snapshot: Snapshot) -> str:
    """The answer of a reconnect, the same for the model's `mcp` tool, `/mcp` and the CLI:
    what happened, never what the server said."""
    return f"{snapshot.server}: reset to {snapshot.state}; the next use connects"


def snapshot_line(snapshot: Snapshot, *, for_model: bool = False) -> str:
    """`name: state (protocol …, server name version, N tools): error` for people;
    `name: state, transport, protocol …, tools: N, error: …` for the model."""
    runs = snapshot.task_tools
    tools = None if snapshot.tools is None else sum(1 for tool in snapshot.tools if model_visible(tool, runs))
    tasks = 0 if snapshot.tools is None else sum(1 for tool in snapshot.tools if needs_task(tool, runs))
    notes = [f"{tasks} hidden: they require tasks"] if tasks else []
    notes += [f"{count} hidden by {key}"
              for key, count in zip(("includeTools", "excludeTools"), snapshot.filtered, strict=True) if count]
    hidden = ", ".join(notes) or None
    if for_model:
        parts = [f"{snapshot.server}: {snapshot.state}", snapshot.transport]
        parts += [f"protocol {snapshot.protocol_version}"] if snapshot.protocol_version else []
        parts += [f"tools: {tools}"] if tools is not None else []
        parts += [hidden] if hidden else []
        parts += [f"error: {snapshot.error}"] if snapshot.error is not None else []
        return ", ".join(parts)
    details = []
    if snapshot.protocol_version:
        details.append(f"protocol {snapshot.protocol_version}")
    if snapshot.server_name:
        details.append(one_line(f"{snapshot.server_name} {snapshot.server_version or ''}", 60))
    if tools is not None:
        details.append(counted(tools, "tool"))
    if hidden:
        details.append(hidden)
    line = f"{snapshot.server}: {snapshot.state}"
    if details:
        line += f" ({', '.join(details)})"
    if snapshot.error is not None:
        line += f": {one_line(str(snapshot.error), 300)}"
    return line


def status_lines(runtime: McpRuntime, names: Sequence[str] | None = None, *, for_model: bool = False) -> list[str]:
    """One line a server (`names`, default every configured one), never connecting: a
    disabled server says so, an unknown one raises ServerNotFound."""
    names = sorted([*runtime.servers, *runtime.broken]) if names is None else names
    if not names:
        return ["no MCP servers are configured"]
    lines = []
    for name in names:
        config = runtime.servers.get(name)
        if config is None and name in runtime.broken:
            lines.append(f"{name}: misconfigured: {one_line(runtime.broken[name], 300)}")
        elif config is not None and config.disabled:
            lines.append(f"{name}: disabled")
        else:
            lines.append(snapshot_line(runtime.snapshot(name), for_model=for_model))
    return lines


def status_rows(servers: dict[str, ServerConfig], sources: dict[str, Any],
                credentials: dict[str, str], broken: Mapping[str, str] | None = None) -> list[list[str]]:
    """Rows of the status table: name, source, transport, enabled, credentials; a broken
    entry is a row too (`broken`: its reason, printed under the table)."""
    rows = [["NAME", "SOURCE", "TRANSPORT", "DISABLED", "CREDENTIALS"]]
    for name in sorted([*servers, *(broken or ())]):
        config = servers.get(name)
        if config is None:
            rows.append([name, str(sources.get(name, "-")), "-", "-", "misconfigured (see below)"])
            continue
        rows.append([name, str(sources.get(name, "-")), transport_of(config),
                     "yes" if config.disabled else "no", credentials.get(name, "-")])
    return rows


def filter_note(name: str, config: ServerConfig) -> str | None:
    """`NAME: tool filters: includeTools (2 patterns)` when the server has any, for a
    listing that does not connect (a connection counts what they hide)."""
    def patterns(items: Sequence[str]) -> str:
        return f"{len(items)} pattern{'' if len(items) == 1 else 's'}"

    parts = [f"includeTools ({patterns(config.include_tools)})"] if config.include_tools is not None else []
    parts += [f"excludeTools ({patterns(config.exclude_tools)})"] if config.exclude_tools else []
    return f"{name}: tool filters: {', '.join(parts)}" if parts else None


def table(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) for row in rows)
    return "\n".join(line.rstrip() for line in lines)


WORDS_LINES, WORDS_BYTES = 20, 4096  # of what a server said, after a failure's one line


def server_words(error: BaseException | None, *, verbose: bool = False) -> list[str]:
    """What the server itself said about `error` (its `detail`), indented under a heading,
    for a person: the last 20 lines / 4 KiB, or with `verbose` the whole bounded tail.
    Never for the model."""
    detail = getattr(error, "detail", None)
    if not detail:
        return []
    lines = detail.splitlines()
    kept = lines
    if not verbose:
        kept, size = [], 0
        for line in reversed(lines[-WORDS_LINES:]):
            size += len(line.encode()) + 1
            if size > WORDS_BYTES and kept:
                break
            kept.insert(0, line[-WORDS_BYTES:])
    heading = "the server said" if len(kept) == len(lines) else \
        f"the server said (last {len(kept)} of {len(lines)} lines; --verbose for all)"
    return [f"{heading}:", *(f"  {line}" for line in kept)]


def tool_line(tool: Any) -> str:
    """`name  [task required]  description`: the mark from the listing's `execution.taskSupport`."""
    mark = f"[task {task_mark(tool)}]  " if task_mark(tool) else ""
    return f"{one_line(tool.name, 64)}  {mark}{one_line(tool.description, 120)}".rstrip()


def summary(args: Mapping[str, Any], result: ToolResult) -> str:
    """`mcp call fx/echo: ok, 1 text (5 chars)` — one line for a host's display of a call."""
    target = "/".join(one_line(str(args[key]), 64) for key in ("server", "tool") if args.get(key))
    texts = [item for item in result.content if isinstance(item, TextContent)]
    images = len(result.content) - len(texts)
    parts = ["error" if result.is_error else "ok"]
    if texts:
        parts.append(f"{len(texts)} text ({counted(sum(len(t.text) for t in texts), 'char')})")
    if images:
        parts.append(f"{images} image{'s' if images != 1 else ''}")
    return f"mcp {one_line(str(args.get('action', '')), 16)} {target}".rstrip() + ": " + ", ".join(parts)
