"""`hostlink mcp auth` / `logout` for servers that do not sign in by link: one that has no
authentication is told so, and signing out of one whose token comes from the environment says
nothing is stored. In-process (click's runner); no server is started or reached."""

from __future__ import annotations

import json

from click.testing import CliRunner

from hostlink.cli import cli
from mcp_runtime_support import fixture_children


def run(tmp_path, *argv):
    (tmp_path / "config" / "mcp").mkdir(parents=True, exist_ok=True)
    (tmp_path / "config" / "mcp" / "mcp.json").write_text(json.dumps({"mcpServers": {
        "fx": {"command": "no-such-server"},
        "tok": {"url": "https://mcp.example.com/mcp", "auth": "bearer", "bearerTokenEnv": "TOK"}}}))
    environ = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config"),
               "HOSTLINK_RUNTIME_DIR": str(tmp_path / "rt"), "TOK": "secret-token"}
    result = CliRunner().invoke(cli, ["mcp", *argv], env=environ, prog_name="hostlink")
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert fixture_children() == []
    return result.exit_code, result.stdout + result.stderr


def test_signing_in_to_a_server_without_authentication_is_refused(tmp_path):
    assert run(tmp_path, "auth", "fx") == (2, "hostlink mcp: MCP server 'fx' is not configured with authentication\n")


def test_signing_out_of_a_server_whose_token_comes_from_the_environment_has_nothing_to_remove(tmp_path):
    assert run(tmp_path, "logout", "tok") == (0, "tok: nothing stored (its credentials come from the environment)\n")
