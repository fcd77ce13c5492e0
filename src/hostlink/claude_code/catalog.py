"""The ephemeral tool catalog a provider request offers Claude through the proposal server.

Claude sees host tools as MCP tools named `mcp__<SERVER_NAME>__<alias>`; the Messages API
limits tool names to `^[A-Za-z0-9_-]{1,64}$`. A host name that fits is kept as its own
alias; any other name gets a deterministic alias derived from its hash, so the same tool
set always yields the same catalog (and the same cacheable prompt prefix). Tools that appear
in history but are no longer active get labels that can never be called.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hostlink.host import AssistantMessage, Message, ToolCall, ToolDefinition
from hostlink.host.jsondepth import json_depth_over

SERVER_NAME = "hostlink"
"""The proposal server's name in Claude's MCP config; part of every callable tool name."""

TOOL_PREFIX = f"mcp__{SERVER_NAME}__"
MAX_TOOL_NAME_LENGTH = 64  # the Messages API limit on a tool name
MAX_ALIAS_LENGTH = MAX_TOOL_NAME_LENGTH - len(TOOL_PREFIX)
MAX_TOOLS = 256
MAX_CATALOG_BYTES = 2 * 1024 * 1024
MAX_SCHEMA_DEPTH = 64  # JSON Schema tools recurse per level; real schemas stay far below it

_SAFE_NAME = re.compile(r"[A-Za-z0-9_-]+")
_ALIAS_PREFIX = "tool_"
_ALIAS_HASH_LENGTHS = range(12, MAX_ALIAS_LENGTH - len(_ALIAS_PREFIX) + 1, 4)
REMOVED_PREFIX = "removed:"  # ':' never occurs in a callable name


class CatalogError(ValueError):
    """The active tools cannot be offered to Claude (too many, too large, malformed)."""


@dataclass(frozen=True)
class CatalogEntry:
    alias: str
    name: str
    description: str
    input_schema: Mapping[str, Any]


@dataclass(frozen=True)
class Catalog:
    entries: tuple[CatalogEntry, ...]
    historical_labels: Mapping[str, str]
    _json: bytes = field(repr=False)
    _names: Mapping[str, str] = field(repr=False)  # alias -> host name
    _aliases: Mapping[str, str] = field(repr=False)  # host name -> alias

    def name_for(self, alias: str) -> str | None:
        """The host tool name behind `alias` (None for anything not in the catalog)."""
        return self._names.get(alias)

    def alias_for(self, name: str) -> str | None:
        return self._aliases.get(name)

    def tool_names(self) -> tuple[str, ...]:
        """The callable names Claude's init must list, exactly (in catalog order)."""
        return tuple(qualified_name(entry.alias) for entry in self.entries)

    def to_json(self) -> bytes:
        """The `tools/list` result the proposal server serves: `{"tools": [...]}`."""
        return self._json


def qualified_name(alias: str) -> str:
    return TOOL_PREFIX + alias


def is_safe_name(name: str) -> bool:
    return len(name) <= MAX_ALIAS_LENGTH and _SAFE_NAME.fullmatch(name) is not None


def removed_label(name: str) -> str:
    """The non-callable label of a tool that history mentions but the host no longer offers.

    It depends on the name alone, so earlier transcript records never change when later
    messages arrive. Unsafe names are shown by hash rather than as arbitrary text.
    """
    if is_safe_name(name):
        return REMOVED_PREFIX + name
    return REMOVED_PREFIX + "#" + _digest(name)[:32]


def build_catalog(tools: Sequence[ToolDefinition], history: Sequence[Message]) -> Catalog:
    if len(tools) > MAX_TOOLS:
        raise CatalogError(f"{len(tools)} tools are active; Claude Code accepts at most {MAX_TOOLS}")
    by_name: dict[str, ToolDefinition] = {}
    for tool in tools:
        if not isinstance(tool.name, str):
            raise CatalogError("a tool name is not text")
        if tool.name in by_name:
            raise CatalogError(f"the tool {_describe(tool.name)} is defined twice")
        by_name[tool.name] = tool

    aliases = _assign_aliases(by_name)
    entries = tuple(
        sorted(
            (
                CatalogEntry(
                    alias=aliases[name],
                    name=name,
                    description=_description(tool, aliases[name]),
                    input_schema=_input_schema(tool, aliases[name]),
                )
                for name, tool in by_name.items()
            ),
            key=lambda entry: entry.alias,
        )
    )
    payload = {
        "tools": [
            {"name": entry.alias, "description": entry.description, "inputSchema": entry.input_schema}
            for entry in entries
        ]
    }
    try:
        encoded = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        data = encoded.encode("utf-8")
    except UnicodeEncodeError:
        raise CatalogError("a tool description or schema contains text that is not valid Unicode") from None
    if len(data) > MAX_CATALOG_BYTES:
        raise CatalogError(
            f"the tool catalog is {len(data)} bytes; Claude Code requests accept at most {MAX_CATALOG_BYTES}"
        )

    labels: dict[str, str] = {}
    for message in history:
        if isinstance(message, AssistantMessage):
            for part in message.content:
                if isinstance(part, ToolCall) and part.name not in by_name and part.name not in labels:
                    labels[part.name] = removed_label(part.name)
    return Catalog(
        entries=entries,
        historical_labels=labels,
        _json=data,
        _names={entry.alias: entry.name for entry in entries},
        _aliases=aliases,
    )


def _assign_aliases(by_name: Mapping[str, ToolDefinition]) -> dict[str, str]:
    """Safe names stay; every other name gets `tool_<hash>`, lengthened on any collision.

    Unsafe names are processed in sorted order, so the result depends only on the set.
    """
    aliases = {name: name for name in by_name if is_safe_name(name)}
    taken = set(aliases)
    for name in sorted(n for n in by_name if n not in aliases):
        digest = _digest(name)
        for length in _ALIAS_HASH_LENGTHS:
            alias = _ALIAS_PREFIX + digest[:length]
            if alias not in taken:
                break
        else:  # pragma: no cover - needs a 176-bit hash prefix collision
            raise CatalogError("could not give every tool a distinct name")
        aliases[name] = alias
        taken.add(alias)
    return aliases


def _description(tool: ToolDefinition, alias: str) -> str:
    if not isinstance(tool.description, str):
        raise CatalogError(f"the description of tool {alias} is not text")
    if alias == tool.name:
        return tool.description
    # Claude only sees the alias; tell it which host tool the alias stands for.
    return f"Host tool {json.dumps(tool.name, ensure_ascii=False)}. {tool.description}".rstrip()


def _input_schema(tool: ToolDefinition, alias: str) -> dict[str, Any]:
    """A JSON-object schema with `type: object` (added when absent; anything else fails)."""
    schema = tool.parameters
    if not isinstance(schema, Mapping):
        raise CatalogError(f"the input schema of tool {alias} is not a JSON object")
    plain: dict[str, Any] | None  # a Mapping encodes to a JSON object
    try:
        plain = json.loads(json.dumps(schema, allow_nan=False, default=_plain))
    except (TypeError, ValueError):
        raise CatalogError(f"the input schema of tool {alias} is not valid JSON") from None
    except RecursionError:  # thousands of levels: deeper than the bound below anyway
        plain = None
    if plain is None or json_depth_over(plain, MAX_SCHEMA_DEPTH):
        raise CatalogError(f"the input schema of tool {alias} is nested more than {MAX_SCHEMA_DEPTH} levels deep")
    if "type" not in plain:
        plain = {"type": "object", **plain}
    elif plain["type"] != "object":
        raise CatalogError(f"the input schema of tool {alias} does not describe a JSON object")
    return plain


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError("not JSON")


def _digest(name: str) -> str:
    return hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()


def _describe(name: str) -> str:
    return repr(name) if is_safe_name(name) else "#" + _digest(name)[:12]
