"""`hostlink mcp resources` / `prompts` when a server cannot start: the one server asked for fails
the command with its reason, a listing of every server names it and goes on (JSON: an empty list
beside the reason on stderr). In-process (click's runner); the command does not exist, so no
process starts."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from hostlink.cli import cli

REASON = "MCP server 'fx': command not found: 'no-such-server'"


def run(tmp_path, *argv):
    (tmp_path / "config" / "mcp").mkdir(parents=True, exist_ok=True)
    (tmp_path / "config" / "mcp" / "mcp.json").write_text(
        json.dumps({"mcpServers": {"fx": {"command": "no-such-server"}}}))
    environ = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config"),
               "HOSTLINK_RUNTIME_DIR": str(tmp_path / "rt")}
    result = CliRunner().invoke(cli, ["mcp", *argv], env=environ, prog_name="hostlink")
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("noun", ["resources", "prompts"])
def test_the_one_server_asked_for_fails_the_command_with_its_reason(tmp_path, noun):
    assert run(tmp_path, noun, "fx") == (3, "", f"{REASON}\n")


def test_a_listing_of_every_server_names_the_one_that_failed(tmp_path):
    assert run(tmp_path, "resources") == (3, "", f"hostlink mcp: {REASON}\n")
    assert run(tmp_path, "prompts", "--json") == (3, "[]\n", f"hostlink mcp: {REASON}\n")
