"""`hostlink mcp …` as a person meets it (issue 15): per-server config problems, the
server's own words, exit codes, `--json` errors, argument errors, progress, full output. What the
command decides, so in this process (hostlink_here); tests/cli/test_mcp.py runs the same commands
as real processes. The fixture server's answers come from the module's shared HTTP fixture
server (`web`): which transport carries them is not what these tests are about."""

from __future__ import annotations

import json
import sys

import pytest

from mcp_cli_support import EVERY, configure, hostlink_here, needs_everything
from mcp_runtime_support import fixture_children

GITHUB = {"url": "https://api.example.com/mcp", "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}}


@pytest.fixture
def fx(web):
    """The fixture server `fx` as a config entry: the module's shared one over HTTP."""
    return {"url": web.url}


# --- 1. one bad entry stops only itself ----------------------------------------------


def test_an_unset_variable_breaks_only_its_server_and_status_shows_why(tmp_path, fx):
    env = configure(tmp_path, {"fx": fx, "github": GITHUB, "off": {**GITHUB, "disabled": True}})
    listed = hostlink_here(env, tmp_path, "mcp", "tools", "fx")
    assert listed.returncode == 0, listed.stderr
    assert "echo" in listed.stdout

    status = hostlink_here(env, tmp_path, "mcp", "status")
    assert status.returncode == 0, status.stderr
    rows = {line.split()[0]: line for line in status.stdout.splitlines()}
    assert "misconfigured" in rows["github"] and rows["off"].split()[3] == "yes"
    source = tmp_path / "config" / "mcp" / "mcp.json"
    assert (f"github: misconfigured: {source}: mcpServers.github.headers.Authorization: "
            "environment variable GITHUB_TOKEN is not set") in status.stdout.splitlines()

    shown = json.loads(hostlink_here(env, tmp_path, "mcp", "status", "--json").stdout)
    by_name = {entry["name"]: entry for entry in shown}
    assert "GITHUB_TOKEN is not set" in by_name["github"]["error"]
    assert by_name["fx"]["error"] is None and by_name["off"]["disabled"] is True

    used = hostlink_here(env, tmp_path, "mcp", "tools", "github")
    assert used.returncode != 0
    assert "GITHUB_TOKEN is not set" in used.stderr
    assert fixture_children() == []


# --- 8. an empty status says where a configuration goes -------------------------------


def test_empty_status_names_the_config_paths(tmp_path):
    env = configure(tmp_path, {})
    result = hostlink_here(env, tmp_path, "mcp", "status")
    assert result.returncode == 0
    assert str(tmp_path / "config" / "mcp" / "mcp.json") in result.stdout
    assert str(tmp_path / "config" / "hostlink" / "mcp.json") in result.stdout
    assert ".mcp.json" in result.stdout and "--trust-project" in result.stdout


# --- 5. exit codes and --json errors; complete --json ------------------------------------

FATAL = {"command": sys.executable,
         "args": ["-c", "import sys; sys.stderr.write('FATAL: missing API_KEY\\n'); sys.exit(3)"]}
AUTHED = {"url": "http://127.0.0.1:9/mcp", "auth": "bearer", "bearerTokenEnv": "UX_UNSET_TOKEN"}


@pytest.mark.parametrize(("argv", "code", "name"), [
    (["call", "fx", "fail"], 1, None),
    (["call", "ghost", "echo"], 2, "unknown_server"),
    (["call", "fx", "add", "[1]"], 2, "invalid_arguments"),
    (["call", "fx", "add", '{"a": 1}'], 2, "invalid_arguments"),
    (["call", "fx", "ehco"], 2, "unknown_tool"),
    (["call", "github", "x"], 2, "invalid_config"),
    (["call", "fatal", "x"], 3, "connection_failed"),
    (["call", "authed", "x"], 4, "auth_required"),
    (["tools", "fatal"], 3, "connection_failed"),
    (["connect", "ghost"], 2, "unknown_server"),
])
def test_exit_codes_and_json_errors(tmp_path, fx, argv, code, name):
    env = configure(tmp_path, {"fx": fx, "fatal": FATAL, "github": GITHUB, "authed": AUTHED})
    plain = hostlink_here(env, tmp_path, "mcp", *argv)
    assert plain.returncode == code, plain.stderr
    as_json = hostlink_here(env, tmp_path, "mcp", *argv, "--json")
    assert as_json.returncode == code, as_json.stderr
    shown = json.loads(as_json.stdout)
    if name is None:
        assert shown["isError"] is True
    else:
        assert list(shown) == ["error"] and shown["error"]["code"] == name
        assert shown["error"]["message"] and "\n" not in shown["error"]["message"]
        assert as_json.stderr == ""


@needs_everything
def test_json_is_complete_with_the_real_server(tmp_path):
    env = configure(tmp_path, {"everything": EVERY})
    listed = hostlink_here(env, tmp_path, "mcp", "tools", "everything", "--json")
    tools = {t["name"]: t for t in json.loads(listed.stdout)}
    assert tools["echo"]["title"] == "Echo Tool" and tools["echo"]["annotations"]["readOnlyHint"] is True
    assert tools["get-structured-content"]["outputSchema"]["type"] == "object"
    called = hostlink_here(env, tmp_path, "mcp", "call", "everything", "get-structured-content",
                      '{"location": "New York"}', "--json")
    assert called.returncode == 0, called.stderr
    result = json.loads(called.stdout)
    assert set(result["structuredContent"]) == {"temperature", "conditions", "humidity"}
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]


def test_status_help_says_array(tmp_path):
    assert "JSON array" in hostlink_here(configure(tmp_path, {}), tmp_path, "mcp", "status", "--help").stdout


def test_shell_completion_offers_every_command(tmp_path):
    env = {**configure(tmp_path, {}), "_HOSTLINK_COMPLETE": "bash_complete", "COMP_WORDS": "hostlink ",
           "COMP_CWORD": "1"}
    completed = hostlink_here(env, tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.splitlines() == ["plain,claude-code", "plain,demo", "plain,mcp", "plain,serve"]


# --- 4. argument errors --------------------------------------------------------------------


@needs_everything
def test_argument_errors_list_every_violation_with_the_parameters(tmp_path):
    env = configure(tmp_path, {"everything": EVERY})
    wrong = hostlink_here(env, tmp_path, "mcp", "call", "everything", "echo", '{"msg": "hi"}')
    assert wrong.returncode == 2
    assert wrong.stderr.splitlines() == [
        "arguments do not match the input schema of tool 'echo':",
        '- "message" is a required property at (root)',
        "- unexpected property 'msg' (not a parameter of the tool)",
        "parameters: message (string, required)",
    ]
    typo = hostlink_here(env, tmp_path, "mcp", "call", "everything", "ecoh", "{}")
    assert typo.returncode == 2
    assert "did you mean 'echo'?" in typo.stderr and "`hostlink mcp tools everything`" in typo.stderr
    assert "action 'tools'" not in typo.stderr
    piped = hostlink_here(env, tmp_path, "mcp", "call", "everything", "echo", "-", stdin='{\n "message": "from stdin"}')
    assert (piped.returncode, piped.stdout) == (0, "Echo: from stdin\n"), piped.stderr


def test_json_errors_say_where_and_servers_get_a_suggestion(tmp_path, fx):
    env = configure(tmp_path, {"fx": fx})
    bad = hostlink_here(env, tmp_path, "mcp", "call", "fx", "add", '{"a": 1,\n "b": }')
    assert bad.returncode == 2
    assert bad.stderr.strip() == ("hostlink mcp: the arguments are not valid JSON: Expecting value at line 2 column 7")
    piped = hostlink_here(env, tmp_path, "mcp", "call", "fx", "add", "-", stdin="[1, 2]")
    assert "the arguments on stdin must be a JSON object" in piped.stderr and piped.returncode == 2
    typo = hostlink_here(env, tmp_path, "mcp", "tools", "f")
    assert typo.returncode == 2 and "unknown MCP server 'f' (known: fx)" in typo.stderr
    near = hostlink_here(env, tmp_path, "mcp", "tools", "fxx")
    assert "did you mean 'fx'?" in near.stderr


# --- 7. tools that require tasks are hidden, with a count, unless tasks are on -----------------


@needs_everything
def test_a_task_required_tool_is_hidden_and_counted(tmp_path):
    env = configure(tmp_path, {"everything": EVERY, "tasks": {**EVERY, "tasks": True}})
    listed = hostlink_here(env, tmp_path, "mcp", "tools", "everything")
    names = [line.split()[0] for line in listed.stdout.splitlines()]
    assert "echo" in names and "simulate-research-query" not in names
    as_json = json.loads(hostlink_here(env, tmp_path, "mcp", "tools", "everything", "--json").stdout)
    assert "simulate-research-query" not in [tool["name"] for tool in as_json]
    connected = hostlink_here(env, tmp_path, "mcp", "connect", "everything")
    assert "1 hidden: they require tasks" in connected.stdout
    called = hostlink_here(env, tmp_path, "mcp", "call", "everything", "simulate-research-query", '{"topic": "x"}')
    assert called.returncode == 2
    assert ("MCP server 'everything' runs tool 'simulate-research-query' only as a task; set \"tasks\": true in its "
            "configuration") in called.stderr
    assert "-32601" not in called.stderr


@needs_everything
def test_with_tasks_on_a_task_tool_is_marked_and_runs_in_the_2025_11_25_shape(tmp_path):
    env = configure(tmp_path, {"everything": {**EVERY, "tasks": True}})
    listed = hostlink_here(env, tmp_path, "mcp", "tools", "everything").stdout.splitlines()
    assert next(line for line in listed if line.startswith("simulate-research-query ")).split()[1:3] == [
        "[task", "required]"]
    assert "[task" not in next(line for line in listed if line.startswith("echo "))
    as_json = {tool["name"]: tool for tool in json.loads(
        hostlink_here(env, tmp_path, "mcp", "tools", "everything", "--json").stdout)}
    assert as_json["simulate-research-query"]["task"] == "required" and as_json["echo"]["task"] is None
    called = hostlink_here(env, tmp_path, "mcp", "call", "everything", "simulate-research-query", '{"topic": "x"}')
    assert called.returncode == 0, called.stderr
    assert "# Research Report: x" in called.stdout


# --- 5. a tool's own error under --json is the result object, not {"error": …} ---------------


def test_a_tool_error_under_json_is_the_result_object(tmp_path, fx):
    env = configure(tmp_path, {"fx": fx, "demo": {"command": sys.executable, "args": ["-m", "hostlink.demo"]}})
    fixture = hostlink_here(env, tmp_path, "mcp", "call", "fx", "fail", "--json")
    assert (fixture.returncode, fixture.stderr) == (1, "")
    assert json.loads(fixture.stdout) == {"isError": True, "content": [{"type": "text", "text": "fixture failure"}]}
    raised = hostlink_here(env, tmp_path, "mcp", "call", "demo", "fail", '{"reason": "\\u001b[31mno\\u001b[0m luck"}',
                      "--json")
    assert raised.returncode == 1 and raised.stderr == ""
    shown = json.loads(raised.stdout)
    assert shown["isError"] is True and "error" not in shown
    assert "no luck" in shown["content"][0]["text"]
    assert "\x1b" not in raised.stdout and "\\u001b" not in raised.stdout
    structured = hostlink_here(env, tmp_path, "mcp", "call", "fx", "fail", '{"structured": true}', "--json")
    assert structured.returncode == 1
    assert "\x1b" not in structured.stdout  # structured data stays data: JSON-escaped, never raw on the terminal
    assert json.loads(structured.stdout)["structuredContent"] == {"code": 7, "why": "\x1b[31mfixture\x1b[0m"}
    plain = hostlink_here(env, tmp_path, "mcp", "call", "fx", "fail")
    assert (plain.returncode, plain.stdout, plain.stderr) == (1, "", "fixture failure\n")
