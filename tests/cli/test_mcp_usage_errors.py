"""`hostlink mcp` refuses what it cannot do with one line saying why, writes nothing, and starts
no server: in-process (click's runner), since no process boundary is under test here."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from hostlink.cli import cli
from mcp_runtime_support import fixture_children


@pytest.fixture
def run(tmp_path):
    environ = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config"),
               "XDG_CACHE_HOME": str(tmp_path / "cache"), "HOSTLINK_RUNTIME_DIR": str(tmp_path / "rt")}

    def run(*argv, stdin=None):
        result = CliRunner().invoke(cli, ["mcp", *argv], input=stdin, env=environ, prog_name="hostlink")
        assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
        return result.exit_code, result.stderr

    yield run
    assert not (tmp_path / "config").exists()  # nothing was written
    assert fixture_children() == []


@pytest.mark.parametrize(("argv", "said"), [
    (["add", "x", "--header", "A: b", "--", "cmd"],
     "--header, --auth, --bearer-env and --client-id are for a --url server"),
    (["add", "x", "--url", "https://x.example", "--client-id", "c"], "--client-id needs --auth oauth"),
    (["add", "x", "--url", "https://x.example", "--header", "A: 1", "--header", "A: 2"], "--header 'A' is given twice"),
    (["task", "s", "t1", "--wait", "5", "--cancel"], "give --wait or --cancel, not both"),
    (["get", "nosuch"], "no configuration file has a server named 'nosuch'"),
    (["tools", "nosuch", "--cached"], "unknown MCP server 'nosuch' (known: none configured)"),
])
def test_a_usage_mistake_is_one_line(run, argv, said):
    assert run(*argv) == (2, f"hostlink mcp: {said}\n")


@pytest.mark.parametrize("arguments", ["[" * 100_000 + "]" * 100_000, '{"n": ' + "9" * 5000 + "}"])
def test_arguments_nested_too_deeply_or_with_an_oversized_number_are_refused(run, arguments):
    assert run("call", "s", "t", arguments) == (
        2, "hostlink mcp: the arguments are not valid JSON (nested too deeply or an oversized number)\n")


def test_arguments_on_stdin_over_16_mib_are_refused_unread(run):
    assert run("call", "s", "t", "-", stdin="x" * (16 * 1024 * 1024 + 1)) == (
        2, "hostlink mcp: the arguments on stdin are larger than 16 MiB\n")


def test_an_entry_on_stdin_over_1_mib_is_refused(run):
    assert run("add-json", "x", "-", stdin="x" * (1024 * 1024 + 1)) == (
        2, "hostlink mcp: the entry is larger than 1 MiB\n")


def test_output_to_a_device_or_an_impossible_name_is_refused_before_any_call(run, tmp_path):
    assert run("call", "s", "t", "{}", "--output", os.devnull) == (
        2, f"hostlink mcp: --output {os.devnull!r} is not a regular file; not written\n")
    long_name = str(tmp_path / ("a" * 300))
    assert run("call", "s", "t", "{}", "--output", long_name) == (
        2, f"hostlink mcp: --output {long_name!r} cannot be written (File name too long)\n")


def test_an_import_names_what_is_not_a_server_name_and_writes_nothing_on_a_dry_run(tmp_path):
    source = tmp_path / "claude_desktop_config.json"
    source.write_text(json.dumps({"mcpServers": {"my server!": {"command": "x"}, "ok": {"command": "y"}}}))
    environ = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    result = CliRunner().invoke(cli, ["mcp", "import", "--from", "claude-desktop", "--file", str(source), "--dry-run"],
                                env=environ, prog_name="hostlink")
    assert result.exit_code == 0
    assert result.stdout.splitlines()[1:] == [
        "  + ok: stdio: y (0 args)",
        "  ! 'my server!': not imported: not a hostlink server name (1-64 of A-Z a-z 0-9 _ -)",
        "dry run: nothing written"]
    assert [path.name for path in (tmp_path / "config").rglob("*") if path.is_file()] == []
