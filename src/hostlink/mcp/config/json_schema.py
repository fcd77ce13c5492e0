"""The JSON Schema of an `mcp.json` document, generated from the pydantic schema.

`mcp.schema.json` in the `hostlink.mcp` package is its output, shipped so that
`hostlink mcp schema` prints it without importing pydantic, and editors check a file
against it. A test regenerates it and fails on any difference; after changing the schema,
write it anew with `python -m hostlink.mcp.config.json_schema > src/hostlink/mcp/mcp.schema.json`.

What JSON Schema cannot say stays in the pydantic validators and in the configuration page of
the docs: the cross-field rules of `auth` and `oauth`, URL safety (https, http only on a
loopback host) and `${VAR}` expansion, which happens before an entry is checked.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic.json_schema import models_json_schema

from hostlink.mcp.config.load import MAX_SERVERS
from hostlink.mcp.config.rules import NAME_PATTERN
from hostlink.mcp.config.schema import TYPE_HINTS, HttpServer, StdioServer

DIALECT = "https://json-schema.org/draft/2020-12/schema"


def build_schema() -> dict[str, Any]:
    """The document schema: `$schema` and `mcpServers`, each entry a stdio or an HTTP server."""
    _, top = models_json_schema([(StdioServer, "validation"), (HttpServer, "validation")],
                                by_alias=True, ref_template="#/$defs/{model}")
    defs = {name: _tidy(schema) for name, schema in top["$defs"].items()}
    for model in (StdioServer, HttpServer):
        hints = sorted(hint for hint, kind in TYPE_HINTS.items() if kind is model)
        defs[model.__name__]["properties"]["type"] = {
            "enum": hints, "description": "Accepted when it agrees with the entry (other clients write it)."}
    defs["ServerEntry"] = {
        "description": 'Exactly one of "command" (stdio) or "url" (Streamable HTTP).',
        "anyOf": [{"$ref": "#/$defs/StdioServer"}, {"$ref": "#/$defs/HttpServer"}],
    }
    return {
        "$schema": DIALECT,
        "title": "hostlink mcp.json",
        "description": "MCP servers for hostlink (the mcpServers format other MCP clients use).",
        "type": "object",
        "properties": {
            "$schema": {"type": "string", "description": "The JSON Schema editors check this file against."},
            "registry": {"type": "string", "description": "The MCP registry `hostlink mcp search` and "
                         "`add --from-registry` ask (https; read from hostlink's own user file only)."},
            "mcpServers": {
                "type": "object",
                "description": "The servers, by name.",
                "maxProperties": MAX_SERVERS,
                "propertyNames": {"pattern": NAME_PATTERN.pattern},
                "additionalProperties": {"$ref": "#/$defs/ServerEntry"},
            },
        },
        "required": ["mcpServers"],
        "additionalProperties": False,
        "$defs": dict(sorted(defs.items())),
    }


def _tidy(node: Any) -> Any:
    """Drop pydantic's generated titles, write descriptions for editors, and turn a dict of constrained keys into
    `propertyNames` (pydantic writes `patternProperties`, which lets any other key through)."""
    if isinstance(node, list):
        return [_tidy(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _tidy(value) for key, value in node.items() if key != "title" or not isinstance(value, str)}
    if isinstance(node.get("description"), str):  # a docstring: one line, Markdown code spans
        node["description"] = " ".join(node["description"].split()).replace("``", "`")
    patterns = node.pop("patternProperties", None)
    if patterns is not None:
        (pattern, value), = patterns.items()
        node["propertyNames"] = {"pattern": pattern}
        node["additionalProperties"] = value
    return node


def render() -> str:
    """The schema file's exact text."""
    return json.dumps(build_schema(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    print(render(), end="")
