"""The shipped JSON Schema of mcp.json: equal to what the pydantic schema generates, printed by
`hostlink mcp schema` without pydantic, and agreeing with hostlink's own checks key by key."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

from hostlink.mcp.config.json_schema import build_schema, render
from hostlink.mcp.config.load import ConfigError, parse_document

SHIPPED = files("hostlink.mcp").joinpath("mcp.schema.json")
SCHEMA = json.loads(SHIPPED.read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
BASES = {"StdioServer": {"command": "srv"}, "HttpServer": {"url": "https://mcp.example.com/mcp"}}


def test_the_shipped_file_is_what_the_pydantic_schema_generates():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SHIPPED.read_text(encoding="utf-8") == render(), (
        "mcp.schema.json is stale: python -m hostlink.mcp.config.json_schema > src/hostlink/mcp/mcp.schema.json")


def test_the_documented_regeneration_command_prints_the_shipped_file():
    printed = subprocess.run([sys.executable, "-m", "hostlink.mcp.config.json_schema"], capture_output=True,
                             text=True, encoding="utf-8", check=True)
    assert printed.stdout == SHIPPED.read_text(encoding="utf-8")


def test_every_key_has_a_description():
    for name, definition in build_schema()["$defs"].items():
        for key, prop in definition.get("properties", {}).items():
            assert prop.get("description"), f"{name}.{key} has no description (a docstring in schema.py)"


def test_hostlink_mcp_schema_prints_the_file_without_pydantic():
    from hostlink.cli import cli

    result = CliRunner().invoke(cli, ["mcp", "schema"])
    assert result.exit_code == 0 and json.loads(result.output) == SCHEMA
    probe = ("import sys; from hostlink.cli import main; sys.argv = ['hostlink', 'mcp', 'schema']\n"
             "try: main()\nexcept SystemExit: pass\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'mcp')), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == SCHEMA and done.stderr.strip() == "[]"


def _hostlink_accepts(document: dict[str, Any]) -> bool:
    try:
        parse_document(json.dumps(document), Path("mcp.json"), {})
    except ConfigError:
        return False
    return True


def _agree(document: dict[str, Any]) -> None:
    by_schema = VALIDATOR.is_valid(document)
    assert by_schema == _hostlink_accepts(document), (
        f"the schema {'accepts' if by_schema else 'refuses'} what hostlink does not: {json.dumps(document)}")


def _samples(prop: dict[str, Any], defs: dict[str, Any]) -> list[Any]:
    """Values on both sides of each constraint the schema states for one key."""
    options = [o for o in prop.get("anyOf", [prop]) if o.get("type") != "null"]
    shape = options[0]
    if "$ref" in shape:
        return [None, [], "x", 1]
    values: list[Any] = [None, 1.5, [], {}, "x", True, 7]
    if "enum" in shape:
        values += [*shape["enum"], shape["enum"][0] + "-other"]
    if "minimum" in shape:
        values += [shape["minimum"], shape["minimum"] - 1, shape["maximum"], shape["maximum"] + 1]
    if "maxLength" in shape:
        values += ["a" * shape["maxLength"], "a" * (shape["maxLength"] + 1)]
    if "minLength" in shape:
        values += [""]
    if "pattern" in shape:
        values += ["A_1", "1A", "claude-code/haiku", "bad name"]
    if shape.get("type") == "array":
        limit = shape.get("maxItems", 3)
        values += [["a"], ["a"] * limit, ["a"] * (limit + 1), [1], [""], ["a" * 201]]
    if shape.get("type") == "object":
        values += [{"GOOD_NAME": "v"}, {"bad name": "v"}, {"1X": "v"}, {"X-Token": "v"}, {"A": 1}]
    return values


@pytest.mark.parametrize("kind", sorted(BASES))
def test_schema_and_hostlink_agree_on_every_key_of_an_entry(kind):
    """For each key the schema lists, values on both sides of its stated constraints: the schema
    and hostlink accept or refuse together. Cross-field rules are the documented exception."""
    definition = SCHEMA["$defs"][kind]
    for key, prop in definition["properties"].items():
        if key in ("url", "oauth", "bearerTokenEnv", "auth", "sampling"):
            continue  # URL safety and cross-field rules (CROSS_FIELD), nested blocks: below
        for value in _samples(prop, SCHEMA["$defs"]):
            _agree({"mcpServers": {"s": {**BASES[kind], key: value}}})
    _agree({"mcpServers": {"s": {**BASES[kind], "unknown": 1}}})
    _agree({"mcpServers": {"s": {}}})
    _agree({"mcpServers": {"s": {"command": "a", "url": "https://x.example"}}})
    for hint in ("stdio", "http", "streamable-http", "sse"):
        _agree({"mcpServers": {"s": {**BASES[kind], "type": hint}}})


def test_nested_blocks_agree():
    oauth_base = {"url": "https://mcp.example.com/mcp", "auth": "oauth"}
    machine = {"grantType": "client_credentials", "clientId": "c", "issuer": "https://auth.example.com"}
    for assertion in ({"keyEnv": "K", "alg": "ES256"}, {"keyEnv": "K", "alg": "HS256"},
                      {"keyEnv": "1K", "alg": "ES256"},
                      {"keyEnv": "K", "alg": "RS256", "kid": ""}, {"keyEnv": "K", "alg": "RS256", "kid": "k" * 257},
                      {"keyEnv": "K"}, {"keyEnv": "K", "alg": "ES256", "extra": 1}):
        _agree({"mcpServers": {"s": {**oauth_base, "oauth": {**machine, "clientAssertion": assertion}}}})
    for sampling in ({"model": "claude-code/haiku"}, {"model": "haiku"}, {"model": "a/b", "maxTokens": 0},
                     {"model": "a/b", "maxTokens": 32000}, {"model": "a/b", "maxTokens": 32001}, {"maxTokens": 5},
                     {"model": "a/b", "other": 1}):
        _agree({"mcpServers": {"s": {"command": "srv", "sampling": sampling}}})
    for oauth in ({"grantType": "password"}, {"scope": 5}, {"clientSecretEnv": "bad name", "clientId": "c"}, {"x": 1}):
        _agree({"mcpServers": {"s": {**oauth_base, "oauth": oauth}}})


def test_document_level_agrees():
    entry = {"command": "srv"}
    for document in ({"mcpServers": {}}, {}, {"$schema": "./mcp.schema.json", "mcpServers": {}},
                     {"$schema": 1, "mcpServers": {}}, {"mcpServers": {}, "other": {}},
                     {"mcpServers": {"bad name": entry}}, {"mcpServers": {"n" * 64: entry}},
                     {"mcpServers": {"n" * 65: entry}}, {"mcpServers": {f"s{i}": entry for i in range(64)}},
                     {"mcpServers": {f"s{i}": entry for i in range(65)}}, {"mcpServers": []}):
        _agree(document)


# What JSON Schema cannot express: hostlink refuses these, the schema lets them through. The
# configuration page lists each rule ("Rules the schema does not express").
CROSS_FIELD = [
    {"url": "https://x.example", "auth": "bearer"},
    {"url": "https://x.example", "bearerTokenEnv": "T"},
    {"url": "https://x.example", "oauth": {}},
    {"url": "https://x.example", "auth": "bearer", "bearerTokenEnv": "T", "headers": {"Authorization": "x"}},
    {"url": "https://x.example", "auth": "oauth", "oauth": {"grantType": "client_credentials"}},
    {"url": "https://x.example", "auth": "oauth", "oauth": {"clientSecretEnv": "S"}},
    {"url": "http://mcp.example.com/mcp"},
    {"url": "https://user@x.example"},
    {"url": "https://x.example", "auth": "oauth", "oauth": {"redirectUri": "http://localhost:8000/cb"}},
    {"command": "!secret-tool"},
    {"command": "${UNSET_IN_THIS_TEST}"},
]


@pytest.mark.parametrize("entry", CROSS_FIELD, ids=lambda e: json.dumps(e)[:60])
def test_cross_field_rules_are_hostlinks_alone(entry):
    document = {"mcpServers": {"s": entry}}
    assert VALIDATOR.is_valid(document)
    assert not _hostlink_accepts(document)


def test_the_configuration_page_lists_the_rules_the_schema_cannot_express():
    page = (Path(__file__).parents[2] / "docs" / "configuration.md").read_text()
    section = page.split("## Rules the schema does not express", 1)[1].split("\n## ", 1)[0]
    for words in ('"auth": "bearer"` requires `bearerTokenEnv`', "`oauth` is allowed only with",
                  "must not set `Authorization`", '"grantType": "client_credentials"` requires',
                  "must be https", "with `!` is refused", "`redirectUri` is"):
        assert words in section, words


def test_a_config_file_may_name_its_schema(tmp_path):
    loaded = parse_document('{"$schema": "./mcp.schema.json", "mcpServers": {"a": {"command": "x"}}}',
                            tmp_path / "mcp.json", {})
    assert list(loaded) == ["a"]
    with pytest.raises(ConfigError, match=r"\$schema: must be a string"):
        parse_document('{"$schema": ["x"], "mcpServers": {}}', tmp_path / "mcp.json", {})
    assert VALIDATOR.is_valid({"$schema": "file:///x", "mcpServers": {}})
