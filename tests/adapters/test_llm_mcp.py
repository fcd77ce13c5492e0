"""The real `mcp` tool through the llm adapter, against the demo server over stdio."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import llm
import pytest

from hostlink.adapters.llm.llm_host import LlmHost, ToolError
from hostlink.mcp.config.schema import StdioServer
from hostlink.mcp.extension import McpExtension
from llm_support import leftover_files, leftover_processes
from process_support import started


@pytest.fixture
def host(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("HOSTLINK_RUNTIME_DIR", str(tmp_path / "runtime"))
    # The marker lands in the demo server's command line, so leftovers can be found.
    marker = tmp_path / "marker"
    marker.mkdir()
    demo = StdioServer(command=sys.executable, args=["-m", "hostlink.demo"], cwd=str(marker))
    server = LlmHost([McpExtension(servers={"demo": demo})])
    yield server
    server.close()
    assert not any("hostlink.demo" in line for line in _demo_processes(marker))
    assert leftover_files(tmp_path / "runtime") == []


def _demo_processes(marker: Path) -> list[str]:
    found = []
    for pid in Path("/proc").iterdir():
        if pid.name.isdigit():
            try:
                if Path(f"/proc/{pid.name}/cwd").resolve() == marker.resolve():
                    found.append((pid / "cmdline").read_bytes().decode(errors="replace"))
            except OSError:
                continue
    return found


def mcp_tool(host: LlmHost) -> llm.Tool:
    return next(tool for tool in host.tools() if tool.name == "mcp")


def test_call_returns_the_servers_text(host):
    output = mcp_tool(host).implementation(action="call", server="demo", tool="echo", args={"text": "hello llm"})
    assert isinstance(output, str) and "hello llm" in output


def test_connection_lives_across_calls_and_closes_at_the_end(host, tmp_path):
    tool = mcp_tool(host)
    tool.implementation(action="call", server="demo", tool="add", args={"a": 2, "b": 3})
    first = _demo_processes(tmp_path / "marker")
    assert len(first) == 1
    assert "5" in tool.implementation(action="call", server="demo", tool="add", args={"a": 2, "b": 3})
    assert _demo_processes(tmp_path / "marker") == first
    host.close()
    assert _demo_processes(tmp_path / "marker") == []


def test_images_are_attachments(host):
    output = mcp_tool(host).implementation(action="call", server="demo", tool="swatch", args={"size": 4})
    assert isinstance(output, llm.ToolOutput)
    assert [a.type for a in output.attachments] == ["image/png"]
    assert output.attachments[0].content.startswith(b"\x89PNG")


def test_server_errors_are_tool_errors(host):
    with pytest.raises(ToolError, match="failed on purpose"):
        mcp_tool(host).implementation(action="call", server="demo", tool="fail", args={})


def test_unknown_server_is_a_tool_error(host):
    with pytest.raises(ToolError, match="nowhere"):
        mcp_tool(host).implementation(action="call", server="nowhere", tool="echo", args={})


def test_the_reconnect_action_is_offered_and_answers_what_it_did(host):
    tool = mcp_tool(host)
    assert "reconnect" in tool.input_schema["properties"]["action"]["enum"]
    assert "reconnect (`server`)" in tool.description
    assert tool.implementation(action="reconnect", server="demo") == "demo: reset to idle; the next use connects"


def test_llm_chain_runs_the_mcp_tool(host):
    # llm's own tool loop (execute_tool_calls) drives the adapter's tool implementation.
    tool = mcp_tool(host)
    call = llm.ToolCall(name="mcp", arguments={"action": "tools", "server": "demo"}, tool_call_id="t1")
    prompt = llm.Prompt("x", _NoModel(), tools=[tool])
    result = llm.Response(prompt, _NoModel(), stream=False).execute_tool_calls(tool_calls_list=[call])[0]
    assert result.exception is None
    assert "echo" in result.output and "app_refresh" not in result.output


class _NoModel(llm.Model):
    model_id = "no-model"
    supports_tools = True

    def execute(self, prompt, stream, response, conversation):  # pragma: no cover - never prompted
        raise AssertionError("not prompted")


def test_leftover_scan_sees_a_live_process(tmp_path):
    # The scanner used by the end-to-end tests must be able to fail.
    import subprocess

    with started([sys.executable, "-c", "import time; print(flush=True); time.sleep(60)", str(tmp_path)],
                 stdout=subprocess.PIPE) as child:
        child.stdout.readline()  # it has exec'd: until then its command line is still pytest's
        assert leftover_processes(str(tmp_path))
    assert leftover_processes(str(tmp_path)) == []


@pytest.mark.parametrize("trust", ["", "1"])
def test_session_reads_user_and_project_config_with_trust_from_the_environment(tmp_path, monkeypatch, capsys, trust):
    config = tmp_path / "config" / "hostlink"
    config.mkdir(parents=True)
    (config / "mcp.json").write_text(json.dumps({"mcpServers": {"userserver": {"command": "true"}}}))
    project = tmp_path / "project"
    project.mkdir()
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"projserver": {"command": "true"}}}))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("HOSTLINK_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("HOSTLINK_TRUST_PROJECT", trust)
    monkeypatch.chdir(project)
    host = LlmHost([McpExtension()])
    try:
        status = mcp_tool(host).implementation(action="status")
    finally:
        host.close()
    assert "userserver" in status
    if trust:
        assert "projserver" in status
    else:
        assert "projserver" not in status
        warning = "hostlink warning: MCP servers from the untrusted project were ignored: projserver"
        assert warning in capsys.readouterr().err
