"""mkdocs hook: the configuration page's key reference, generated from the shipped JSON Schema.

`<!-- mcp-schema-reference -->` in a page becomes one table per part of a server entry
(keys every entry has, stdio keys, HTTP keys, the `oauth`, `clientAssertion`, `sampling` and
`fromRegistry` blocks), read from `hostlink/mcp/mcp.schema.json` at build time. That file is
generated from the pydantic schema and a test keeps them equal, so the page cannot drift
from what hostlink accepts.
"""

from __future__ import annotations

import json
from importlib.resources import files
from typing import Any

MARKER = "<!-- mcp-schema-reference -->"
SECTIONS = (  # (heading, definition, keys: "common" | "own" | "all")
    ("Every server entry", "StdioServer", "common"),
    ("Stdio servers (`command`)", "StdioServer", "own"),
    ("Streamable HTTP servers (`url`)", "HttpServer", "own"),
    ("`oauth`", "OAuthSettings", "all"),
    ("`oauth.clientAssertion`", "ClientAssertion", "all"),
    ("`sampling`", "SamplingSettings", "all"),
    ("`fromRegistry`", "RegistrySource", "all"),
)


def load_schema() -> dict[str, Any]:
    return json.loads(files("hostlink.mcp").joinpath("mcp.schema.json").read_text(encoding="utf-8"))


def reference(schema: dict[str, Any]) -> str:
    defs = schema["$defs"]
    common = set(defs["StdioServer"]["properties"]) & set(defs["HttpServer"]["properties"]) - {"type"}
    parts = []
    for heading, name, which in SECTIONS:
        definition = defs[name]
        keys = [key for key in definition["properties"]
                if which == "all" or (key in common) == (which == "common")]
        required = set(definition.get("required", []))
        rows = ["| key | type | default | allowed | meaning |", "| --- | --- | --- | --- | --- |"]
        rows += [_row(key, definition["properties"][key], key in required) for key in keys]
        parts.append(f"### {heading}\n\n" + "\n".join(rows) + "\n")
    return "\n".join(parts)


def _row(key: str, prop: dict[str, Any], required: bool) -> str:
    options = [option for option in prop.get("anyOf", [prop]) if option.get("type") != "null"]
    shape = options[0]
    kind = shape.get("type") or ("object" if "$ref" in shape else "enum" if "enum" in shape else "")
    if kind == "array":
        kind = f"array of {shape['items'].get('type', 'string')}"
    default = "required" if required else _code(prop["default"]) if "default" in prop else "—"
    return f"| `{key}` | {kind} | {default} | {_allowed(shape) or '—'} | {prop.get('description', '')} |"


def _allowed(shape: dict[str, Any]) -> str:
    facts = []
    if "enum" in shape:
        facts.append(" \\| ".join(_code(value) for value in shape["enum"]))
    if "minimum" in shape:
        facts.append(f"{shape['minimum']}–{shape['maximum']}")
    for limit, words in (("minLength", "≥ {} characters"), ("maxLength", "≤ {} characters"),
                         ("maxItems", "≤ {} items")):
        if limit in shape:
            facts.append(words.format(shape[limit]))
    if "items" in shape and "maxLength" in shape["items"]:
        facts.append(f"each ≤ {shape['items']['maxLength']} characters")
    pattern = shape.get("pattern") or shape.get("propertyNames", {}).get("pattern")
    if pattern:
        facts.append(("names " if "propertyNames" in shape else "") + f"<code>{_escape(pattern)}</code>")
    return "; ".join(facts)


def _code(value: Any) -> str:
    return f"`{json.dumps(value)}`"


def _escape(text: str) -> str:
    """A pattern as HTML code text: nothing in it may read as Markdown (a table cell, a link)."""
    for char, entity in (("&", "&amp;"), ("<", "&lt;"), ("|", "&#124;"), ("`", "&#96;"), ("[", "&#91;"),
                         ("]", "&#93;"), ("_", "&#95;"), ("*", "&#42;"), ("\\", "&#92;")):
        text = text.replace(char, entity)
    return text


def on_page_markdown(markdown: str, **_: Any) -> str:
    return markdown.replace(MARKER, reference(load_schema())) if MARKER in markdown else markdown
