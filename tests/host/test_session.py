"""The host session every host sits on: one output budget, stale recovery, idempotent shutdown."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from hostlink.claude_code.extension import ClaudeCodeExtension
from hostlink.host import CancelSignal, CommandFailed
from hostlink.host.private import MARKER
from hostlink.host.session import HostSession, Terminated
from hostlink.mcp.config.schema import StdioServer
from hostlink.mcp.extension import McpExtension
from mcp_runtime_support import FIXTURE, Notes, fixture_children

pytestmark = pytest.mark.anyio


def fixture_server() -> StdioServer:
    return StdioServer(command=sys.executable, args=[FIXTURE])


def stale_dir(root):
    root.mkdir(exist_ok=True)
    stale = root / "output-stale"
    stale.mkdir(mode=0o700)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (stale / MARKER).write_text(json.dumps({"package": "hostlink", "pid": dead.pid, "created": time.time() - 3600}))
    return stale


async def test_one_output_budget_for_every_extension_of_a_session(tmp_path, runtime_dir, web):
    """The budget is the session's decision: the module's HTTP fixture server answers the call."""
    mcp, claude = McpExtension(servers={"fx": web.config()}), ClaudeCodeExtension(environ={"PATH": ""})
    host = HostSession([mcp, claude])
    await host.start(cwd=tmp_path, project_trusted=False, notifier=Notes())
    try:
        assert host.output is not None and mcp.output is host.output and claude._output is host.output
        runtime = mcp.runtime
        result = await host.run_tool("mcp", {"action": "call", "server": "fx", "tool": "big",
                                             "args": {"n_bytes": 200_000}}, CancelSignal())
        assert "full output saved to" in result.content[0].text
        assert host.output.used_bytes == 200_000
    finally:
        await host.shutdown()
    assert runtime.snapshot("fx").state == "closed"  # its connection was closed


async def test_stale_state_is_recovered_in_a_host_with_only_the_mcp_extension(tmp_path, runtime_dir):
    stale = stale_dir(runtime_dir)
    host = HostSession([McpExtension(servers={})])
    assert stale.exists()  # registration does nothing
    await host.start(cwd=tmp_path, project_trusted=False, notifier=Notes())
    assert not stale.exists()
    await host.shutdown()


async def test_shutdown_is_idempotent_and_a_closed_session_runs_nothing(tmp_path, runtime_dir):
    host = HostSession([McpExtension(servers={"fx": fixture_server()})])
    await host.shutdown()  # before start: nothing to do
    host = HostSession([McpExtension(servers={"fx": fixture_server()})])
    assert not host.started
    await host.start(cwd=tmp_path, project_trusted=False, notifier=Notes())
    assert host.started
    await host.run_tool("mcp", {"action": "call", "server": "fx", "tool": "echo", "args": {"text": "x"}},
                        CancelSignal())
    assert len(fixture_children()) == 1
    await host.shutdown()
    await host.shutdown()
    assert not host.started
    assert fixture_children() == []
    with pytest.raises(RuntimeError, match="closed"):
        await host.run_tool("mcp", {"action": "status"}, CancelSignal())
    with pytest.raises(RuntimeError, match="already closed"):
        await host.start(cwd=tmp_path, project_trusted=False, notifier=Notes())


async def test_commands_fail_with_a_safe_message(tmp_path, runtime_dir):
    host = HostSession([McpExtension(servers={})])
    await host.start(cwd=tmp_path, project_trusted=False, notifier=Notes())
    try:
        with pytest.raises(CommandFailed, match="unknown MCP server 'ghost'"):
            await host.run_command("mcp", ["connect", "ghost"], CancelSignal())
        with pytest.raises(CommandFailed, match="no command named 'nope'"):
            await host.run_command("nope", [], CancelSignal())
    finally:
        await host.shutdown()


async def test_sigterm_stops_the_work_and_still_shuts_down(tmp_path, runtime_dir):
    host = HostSession([McpExtension(servers={"fx": fixture_server()})])

    async def work():
        await host.start(cwd=tmp_path, project_trusted=False, notifier=Notes())
        await host.run_tool("mcp", {"action": "call", "server": "fx", "tool": "echo", "args": {"text": "x"}},
                            CancelSignal())
        assert len(fixture_children()) == 1
        os.kill(os.getpid(), signal.SIGTERM)
        await host.run_tool("mcp", {"action": "call", "server": "fx", "tool": "hang"}, CancelSignal())
        raise AssertionError("the hanging call was not stopped")

    with pytest.raises(Terminated, match="SIGTERM"):
        await host.run(work)
    assert fixture_children() == []
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


async def test_a_planted_runtime_root_neither_stops_the_session_nor_escapes_the_tool(tmp_path, monkeypatch, web):
    planted = tmp_path / "planted"
    planted.symlink_to(tmp_path)
    monkeypatch.setenv("HOSTLINK_RUNTIME_DIR", str(planted))
    notes = Notes()
    mcp = McpExtension(servers={"fx": web.config()})
    host = HostSession([mcp])
    await host.start(cwd=tmp_path, project_trusted=False, notifier=notes)
    try:
        runtime = mcp.runtime
        assert notes.seen == [("warning", "stale private state was not recovered: "
                                          "the hostlink runtime directory is not a real directory")]
        result = await host.run_tool("mcp", {"action": "call", "server": "fx", "tool": "big",
                                             "args": {"n_bytes": 200_000}}, CancelSignal())
        assert not result.is_error
        assert result.content[0].text.endswith("full output not kept (no private overflow file: "
                                               "the hostlink runtime directory is not a real directory)]")
    finally:
        await host.shutdown()
    assert runtime.snapshot("fx").state == "closed"  # its connection was closed
