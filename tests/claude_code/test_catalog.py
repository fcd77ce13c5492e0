"""The Claude tool catalog: kept and aliased names, historical labels, limits."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hostlink.claude_code.catalog import (
    MAX_CATALOG_BYTES,
    MAX_SCHEMA_DEPTH,
    MAX_TOOL_NAME_LENGTH,
    MAX_TOOLS,
    CatalogError,
    build_catalog,
    qualified_name,
)
from hostlink.host import AssistantMessage, TextContent, ToolCall, ToolDefinition, UserMessage

OBJECT = {"type": "object", "properties": {}}
CALLABLE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def tool(name: str, description: str = "d", parameters=None) -> ToolDefinition:
    return ToolDefinition(name, description, OBJECT if parameters is None else parameters)


def test_safe_names_are_kept_and_entries_sorted_by_alias():
    catalog = build_catalog([tool("write"), tool("Read"), tool("bash-2")], [])
    assert [entry.alias for entry in catalog.entries] == ["Read", "bash-2", "write"]
    assert catalog.name_for("write") == "write"
    assert catalog.alias_for("Read") == "Read"
    assert catalog.tool_names() == ("mcp__hostlink__Read", "mcp__hostlink__bash-2", "mcp__hostlink__write")
    served = json.loads(catalog.to_json())
    assert [item["name"] for item in served["tools"]] == ["Read", "bash-2", "write"]
    assert served["tools"][0] == {"name": "Read", "description": "d", "inputSchema": OBJECT}


@pytest.mark.parametrize("name", ["my.tool", "a b", "ünïcode", "x" * 50, "", "bad/name", "tool@host"])
def test_unsafe_names_get_hash_aliases_that_claude_can_call(name):
    catalog = build_catalog([tool(name)], [])
    (entry,) = catalog.entries
    assert entry.alias != name and entry.alias.startswith("tool_")
    assert CALLABLE.match(qualified_name(entry.alias))
    assert catalog.name_for(entry.alias) == name and catalog.alias_for(name) == entry.alias
    # Claude only sees the alias, so the description says which host tool it is.
    assert json.dumps(name, ensure_ascii=False) in entry.description


def test_longest_safe_name_fits_claudes_limit_and_one_more_is_aliased():
    room = MAX_TOOL_NAME_LENGTH - len(qualified_name(""))
    fits, too_long = "a" * room, "a" * (room + 1)
    catalog = build_catalog([tool(fits), tool(too_long)], [])
    assert catalog.alias_for(fits) == fits
    assert catalog.alias_for(too_long) != too_long
    assert all(len(name) <= MAX_TOOL_NAME_LENGTH for name in catalog.tool_names())


def test_aliases_are_deterministic_and_independent_of_order():
    names = ["x.y", "a b", "plain", "q?"]
    first = build_catalog([tool(n) for n in names], [])
    second = build_catalog([tool(n) for n in reversed(names)], [])
    assert first.to_json() == second.to_json()
    assert {n: first.alias_for(n) for n in names} == {n: second.alias_for(n) for n in names}


def test_alias_collision_with_a_safe_name_is_resolved():
    unsafe = "my.tool"
    alias = build_catalog([tool(unsafe)], []).alias_for(unsafe)
    # A host tool that happens to be literally named like the generated alias keeps its name.
    catalog = build_catalog([tool(unsafe), tool(alias)], [])
    assert catalog.alias_for(alias) == alias
    assert catalog.alias_for(unsafe) not in (alias, None)
    assert len({entry.alias for entry in catalog.entries}) == 2


@given(st.lists(st.text(max_size=70), max_size=30, unique=True))
def test_aliases_are_collision_free_and_callable(names):
    catalog = build_catalog([tool(n) for n in names], [])
    aliases = [entry.alias for entry in catalog.entries]
    assert len(set(aliases)) == len(names)
    assert all(CALLABLE.match(qualified_name(a)) for a in aliases)
    assert all(catalog.name_for(catalog.alias_for(n)) == n for n in names)


def test_removed_historical_tools_get_non_callable_labels():
    history = [
        UserMessage([TextContent("hi")]),
        AssistantMessage([ToolCall("1", "read", {}), ToolCall("2", "old_tool", {}), ToolCall("3", "old.dotted", {})]),
    ]
    catalog = build_catalog([tool("read")], history)
    assert set(catalog.historical_labels) == {"old_tool", "old.dotted"}
    assert catalog.historical_labels["old_tool"] == "removed:old_tool"
    dotted = catalog.historical_labels["old.dotted"]
    assert dotted.startswith("removed:#") and "old.dotted" not in dotted
    for label in catalog.historical_labels.values():
        assert not CALLABLE.match(label)
        assert catalog.name_for(label) is None


def test_duplicate_tool_names_fail():
    with pytest.raises(CatalogError, match="defined twice"):
        build_catalog([tool("a"), tool("a")], [])


def test_too_many_tools_fail():
    build_catalog([tool(f"t{i}") for i in range(MAX_TOOLS)], [])
    with pytest.raises(CatalogError, match="at most 256"):
        build_catalog([tool(f"t{i}") for i in range(MAX_TOOLS + 1)], [])


def test_too_large_catalog_fails():
    big = "x" * (MAX_CATALOG_BYTES // 2)
    build_catalog([tool("a", big[:-1000])], [])
    with pytest.raises(CatalogError, match="bytes"):
        build_catalog([tool("a", big), tool("b", big)], [])


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (["not", "an", "object"], "not a JSON object"),
        ({"type": "string"}, "does not describe a JSON object"),
        ({"type": "object", "default": float("nan")}, "not valid JSON"),
        ({"type": "object", "x": object()}, "not valid JSON"),
    ],
)
def test_bad_input_schemas_fail_naming_the_tool(schema, message):
    with pytest.raises(CatalogError, match=message) as failure:
        build_catalog([tool("grep", parameters=schema)], [])
    assert "grep" in str(failure.value)


def test_schema_without_type_is_served_as_an_object_schema():
    catalog = build_catalog([tool("a", parameters={"properties": {"x": {"type": "string"}}})], [])
    assert catalog.entries[0].input_schema == {"type": "object", "properties": {"x": {"type": "string"}}}


def nested(levels: int) -> dict:
    """A schema of `levels` objects, each the property of the one around it (2 x - 1 JSON levels)."""
    schema: dict = {"type": "object"}
    for _ in range(levels - 1):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


@pytest.mark.parametrize("levels", [MAX_SCHEMA_DEPTH // 2 + 1, 964 // 2, 5000])
def test_a_schema_nested_too_deep_fails_naming_the_tool(levels):
    """964 levels was a RecursionError in the catalog's json.dumps (a plain-text 500 in serve)."""
    with pytest.raises(CatalogError, match=f"grep is nested more than {MAX_SCHEMA_DEPTH} levels deep"):
        build_catalog([tool("grep", parameters=nested(levels))], [])


def test_a_schema_at_the_depth_limit_is_served():
    schema = nested(MAX_SCHEMA_DEPTH // 2)  # each level of properties is two JSON objects
    assert build_catalog([tool("a", parameters=schema)], []).entries[0].input_schema == schema


@pytest.mark.parametrize(("tool", "message"), [
    (ToolDefinition(1, "d", {"type": "object"}), "a tool name is not text"),
    (ToolDefinition("t", 2, {"type": "object"}), "the description of tool t is not text"),
    (ToolDefinition("t", "bad \ud800", {"type": "object"}),
     "a tool description or schema contains text that is not valid Unicode"),
    (ToolDefinition("t", "d", {"type": "object", "enum": {1, 2}}), "the input schema of tool t is not valid JSON"),
], ids=["name", "description", "unicode", "set"])  # fmt: skip
def test_a_tool_an_embedding_program_got_wrong_is_refused_by_name(tool, message):
    with pytest.raises(CatalogError, match=f"^{re.escape(message)}$"):
        build_catalog([tool], [])


def test_a_schema_built_of_any_mappings_is_carried_as_objects():
    from types import MappingProxyType

    schema = {"type": "object", "properties": MappingProxyType({"path": MappingProxyType({"type": "string"})})}
    (entry,) = build_catalog([ToolDefinition("read", "Read", schema)], []).entries
    assert entry.input_schema == {"type": "object", "properties": {"path": {"type": "string"}}}
