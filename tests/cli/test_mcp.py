"""`hostlink mcp …` in real subprocesses, reading real config files: the end-to-end runs of
status, tools, connect, call, disconnect, reconnect and demo, and the exit codes of the real
entry point (one failure per exit code). The listings of trusted and untrusted project servers,
the other refusals and the `--json` and sanitized forms of a listing or result, what the command
decides, run in this process (hostlink_here), those forms against the module's shared HTTP
fixture server (`web`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_cli_support import hostlink_here
from mcp_runtime_support import FIXTURE, fixture_children


@pytest.fixture
def env(tmp_path):
    config_home = tmp_path / "config"
    (config_home / "mcp").mkdir(parents=True)
    (config_home / "mcp" / "mcp.json").write_text(json.dumps({"mcpServers": {
        "fx": {"command": sys.executable, "args": [FIXTURE]},
        "off": {"command": sys.executable, "args": [FIXTURE], "disabled": True},
        "web": {"url": "http://127.0.0.1:9/mcp"},
    }}))
    environ = {key: value for key, value in os.environ.items() if key != "HOSTLINK_TRUST_PROJECT"}
    environ.update(XDG_CONFIG_HOME=str(config_home), HOME=str(tmp_path), HOSTLINK_RUNTIME_DIR=str(tmp_path / "rt"))
    return environ


def over_http(env, tmp_path, web):
    """`env` with `fx` the module's shared fixture server over HTTP: for a form of its answer,
    where the stdio child (run for real by the same test) is not what is checked."""
    config_home = tmp_path / "http-config"
    (config_home / "mcp").mkdir(parents=True)
    (config_home / "mcp" / "mcp.json").write_text(json.dumps({"mcpServers": {"fx": {"url": web.url}}}))
    return {**env, "XDG_CONFIG_HOME": str(config_home)}


def hostlink(env, tmp_path, *argv: str):
    return subprocess.run([sys.executable, "-c", "from hostlink.cli import main; main()", *argv],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)


def test_status_lists_servers_and_never_imports_the_sdk(env, tmp_path):
    probe = (
        "import sys\n"
        "from hostlink.cli import main\n"
        "sys.argv = ['hostlink', 'mcp', 'status']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = [m for m in ('mcp', 'mcp_types', 'keyring', 'httpx2') if m in sys.modules]\n"
        "print('HEAVY=' + ','.join(heavy))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env,
                            cwd=tmp_path, timeout=60)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1] == "HEAVY="
    assert lines[0].split() == ["NAME", "SOURCE", "TRANSPORT", "DISABLED", "CREDENTIALS"]
    assert lines[1].split()[0::2] == ["fx", "stdio", "-"] and lines[2].split()[3] == "yes"
    assert lines[3].split()[:3:2] == ["web", "http"]
    assert fixture_children() == []


def test_status_json(env, tmp_path):
    result = hostlink_here(env, tmp_path, "mcp", "status", "--json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert [(r["name"], r["transport"], r["disabled"]) for r in rows] == [
        ("fx", "stdio", False), ("off", "stdio", True), ("web", "http", False)]


def test_tools_connect_and_call(env, tmp_path, web):
    tools = hostlink(env, tmp_path, "mcp", "tools", "fx")
    assert tools.returncode == 0, tools.stderr
    assert tools.stdout.split("\n")[0].split()[0] == "echo" and "app_only" not in tools.stdout
    shared = over_http(env, tmp_path, web)
    as_json = json.loads(hostlink_here(shared, tmp_path, "mcp", "tools", "fx", "--json").stdout)
    assert {"name", "title", "description", "inputSchema", "outputSchema", "annotations", "task"} == set(as_json[0])
    assert as_json[0]["task"] is None  # the fixture's echo runs inline (a task tool says "required" or "optional")
    connect = hostlink(env, tmp_path, "mcp", "connect", "fx")
    assert connect.stdout.strip() == "fx: connected (protocol 2026-07-28, hostlink-fixture 1.0.0, 16 tools)"
    call = hostlink(env, tmp_path, "mcp", "call", "fx", "add", '{"a": 2, "b": 3}')
    assert (call.returncode, call.stdout) == (0, "5\n")
    structured = json.loads(hostlink_here(shared, tmp_path, "mcp", "call", "fx", "structured", "{}", "--json").stdout)
    assert structured["isError"] is False
    assert json.loads(structured["content"][0]["text"])["city"] == "Paris"
    failed = hostlink(env, tmp_path, "mcp", "call", "fx", "fail")
    assert failed.returncode == 1 and "fixture failure" in failed.stderr
    escapes = hostlink_here(shared, tmp_path, "mcp", "call", "fx", "escapes")
    assert "\x1b" not in escapes.stdout and "\x07" not in escapes.stdout
    assert fixture_children() == []


@pytest.mark.parametrize(("argv", "message", "code", "run"), [
    (["tools", "ghost"], "unknown MCP server 'ghost' (known: fx, off, web)", 2, hostlink),
    (["connect", "off"], "MCP server 'off' is disabled in ", 2, hostlink_here),
    (["call", "fx", "add", "[1]"], "the arguments must be a JSON object of tool arguments (got a JSON list)", 2,
     hostlink_here),
    (["call", "fx", "add", "{bad"], "the arguments are not valid JSON: Expecting property name enclosed in double "
                                    "quotes at line 1 column 2", 2, hostlink_here),
    (["connect", "web"], "MCP server 'web' cannot be reached at its URL", 3, hostlink),
])
def test_failures_are_one_line_with_their_exit_code(env, tmp_path, argv, message, code, run):
    """Each exit code once from the real entry point; the other refusals' words, what the command
    decides, in this process."""
    result = run(env, tmp_path, "mcp", *argv)
    assert result.returncode == code
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert "Traceback" not in result.stderr


def test_disconnect_and_reconnect_explain_and_never_connect(env, tmp_path):
    assert "idle" in hostlink(env, tmp_path, "mcp", "disconnect", "fx").stdout
    # the words of `/mcp reconnect` and of the mcp tool's action reconnect
    assert hostlink(env, tmp_path, "mcp", "reconnect", "fx").stdout == "fx: reset to idle; the next use connects\n"
    assert hostlink_here(env, tmp_path, "mcp", "reconnect", "ghost").returncode == 2


def test_project_servers_need_trust(env, tmp_path):
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": {"command": "/bin/true"}}}))
    untrusted = hostlink_here(env, tmp_path, "mcp", "status", "--json")
    assert "proj" not in [row["name"] for row in json.loads(untrusted.stdout)]
    assert "ignored servers of the untrusted project" in untrusted.stderr and "proj" in untrusted.stderr
    flag = hostlink_here(env, tmp_path, "mcp", "--trust-project", "status", "--json")
    assert "proj" in [row["name"] for row in json.loads(flag.stdout)]
    setting = hostlink_here({**env, "HOSTLINK_TRUST_PROJECT": "1"}, tmp_path, "mcp", "status", "--json")
    source = {row["name"]: row["source"] for row in json.loads(setting.stdout)}["proj"]
    assert Path(source) == tmp_path / ".mcp.json"


def test_demo(tmp_path, env):
    result = subprocess.run([sys.executable, "-c", "from hostlink.cli import main; main()", "demo"],
                            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "server 'demo' tool 'echo'" in result.stdout and "app_refresh" not in result.stdout
    assert result.stdout.rstrip().endswith("hello from hostlink")


def test_registering_the_extension_imports_no_sdk(env, tmp_path):
    probe = (
        "import sys\n"
        "from hostlink.host import Registry\n"
        "from hostlink.mcp.extension import McpExtension\n"
        "registry = Registry()\n"
        "McpExtension().register(registry)\n"
        "assert sorted(registry.tools) == ['mcp'] and sorted(registry.commands) == ['mcp']\n"
        "print(','.join(m for m in ('mcp', 'mcp_types', 'keyring', 'httpx2', 'jsonschema') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env,
                            cwd=tmp_path, timeout=60)
    assert (result.returncode, result.stdout, result.stderr) == (0, "\n", "")
