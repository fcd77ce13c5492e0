"""`/mcp reload` against real configuration files in a temporary HOME."""

from __future__ import annotations

import json

import pytest

from hostlink.host import CancelSignal, CommandFailed
from hostlink.mcp.extension import McpExtension
from mcp_runtime_support import Host, alive, fixture_children, stdio, text

pytestmark = pytest.mark.anyio


def entry(**fields):
    fixture = stdio()
    return {"command": fixture.command, "args": list(fixture.args), **fields}


async def pid_of(host, server):
    return int(text(await host.run(action="call", server=server, tool="pid", args={})))


async def test_reload_resets_changed_servers_keeps_the_others_and_survives_a_broken_file(tmp_path, runtime_dir):
    config = tmp_path / "config" / "hostlink" / "mcp.json"
    config.parent.mkdir(parents=True)
    config.write_text(json.dumps({"mcpServers": {"same": entry(), "edited": entry()}}))
    extension = McpExtension(environ={"XDG_CONFIG_HOME": str(tmp_path / "config"), "HOME": str(tmp_path)})
    async with Host(extension, tmp_path) as host:
        async def reload() -> str:
            return await host.session.run_command("mcp", ["reload"], CancelSignal())

        same, edited = await pid_of(host, "same"), await pid_of(host, "edited")
        config.write_text(json.dumps({"mcpServers": {"same": entry(), "edited": entry(excludeTools=["echo"]),
                                                     "new": entry(), "bad": {"command": 1}}}))
        answer = await reload()
        assert "changed: edited (reset" in answer and "added: bad, new" in answer
        assert "bad: misconfigured:" in answer
        assert not alive(edited) and alive(same)
        assert await pid_of(host, "same") == same  # kept its connection
        status = text(await host.run(action="status"))
        assert "edited: idle" in status and "new: idle" in status and "same: connected" in status
        assert "bad: misconfigured" in status
        assert "echo" not in text(await host.run(action="tools", server="edited"))

        before, kept = config.read_text(), text(await host.run(action="status"))
        config.write_text("{ not json")
        with pytest.raises(CommandFailed) as refused:
            await reload()
        assert "was not reloaded (the previous one stays in use)" in str(refused.value)
        assert "invalid JSON at line 1" in str(refused.value)
        assert text(await host.run(action="status")) == kept  # the old configuration, connections and all
        assert await pid_of(host, "same") == same

        config.write_text(before.replace('"new"', '"renamed"'))
        answer = await reload()
        assert "added: renamed" in answer and "removed: new" in answer
        assert "new:" not in text(await host.run(action="status"))
        assert await pid_of(host, "same") == same
        unchanged = await reload()
        assert unchanged.splitlines() == ["MCP configuration reloaded: 0 server(s) changed",
                                          "bad: misconfigured: " + unchanged.split("bad: misconfigured: ", 1)[1]]
    assert fixture_children() == []


async def test_reload_of_a_session_that_started_with_a_broken_file(tmp_path, runtime_dir):
    config = tmp_path / "config" / "mcp" / "mcp.json"
    config.parent.mkdir(parents=True)
    config.write_text("[]")
    extension = McpExtension(environ={"XDG_CONFIG_HOME": str(tmp_path / "config"), "HOME": str(tmp_path)})
    async with Host(extension, tmp_path) as host:
        assert (await host.run(action="status")).is_error
        config.write_text(json.dumps({"mcpServers": {"fx": entry()}}))
        assert "added: fx" in await host.session.run_command("mcp", ["reload"], CancelSignal())
        assert text(await host.run(action="status")).startswith("fx: idle")


async def test_reload_of_fixed_servers_says_there_is_no_file(tmp_path, runtime_dir):
    async with Host(McpExtension(servers={"fx": stdio()}), tmp_path) as host:
        with pytest.raises(CommandFailed, match="no configuration file to reload"):
            await host.session.run_command("mcp", ["reload"], CancelSignal())


async def test_reload_asks_the_host_for_its_trust_decision_again(tmp_path, runtime_dir):
    from hostlink.host.session import HostSession
    from mcp_runtime_support import Notes

    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": entry()}}))
    decision = [True]
    extension = McpExtension(environ={"XDG_CONFIG_HOME": str(tmp_path / "config"), "HOME": str(tmp_path)})
    host = HostSession([extension])
    await host.start(cwd=tmp_path, project_trusted=True, notifier=Notes(), trust_again=lambda: decision[0])
    try:
        assert list(extension.runtime.servers) == ["proj"]
        decision[0] = False  # e.g. the project's files changed since they were trusted
        answer = await host.run_command("mcp", ["reload"], CancelSignal())
        assert "removed: proj" in answer and "ignored, from the untrusted project: proj" in answer
        assert list(extension.runtime.servers) == []
    finally:
        await host.shutdown()


async def test_the_tools_reload_action_reads_the_files_as_the_command_does(tmp_path, runtime_dir):
    """The model's `mcp` tool reloads as `/mcp reload` does, also after a start with a broken
    file; `reconnect` keeps its meaning (one server reset, no file read)."""
    config = tmp_path / "config" / "mcp" / "mcp.json"
    config.parent.mkdir(parents=True)
    config.write_text("[]")
    extension = McpExtension(environ={"XDG_CONFIG_HOME": str(tmp_path / "config"), "HOME": str(tmp_path)})
    async with Host(extension, tmp_path) as host:
        assert "reload: read the MCP configuration files again" in host.tool.description
        assert (await host.run(action="status")).is_error
        config.write_text(json.dumps({"mcpServers": {"fx": entry()}}))
        reloaded = await host.run(action="reload")
        assert not reloaded.is_error and "added: fx" in text(reloaded)
        assert reloaded.details["summary"].startswith("mcp reload: ok")
        pid = await pid_of(host, "fx")
        config.write_text(json.dumps({"mcpServers": {"fx": entry(), "gx": entry()}}))
        assert text(await host.run(action="reconnect", server="fx")) == "fx: reset to idle; the next use connects"
        assert "gx" not in text(await host.run(action="status"))  # reconnect read no file
        config.write_text("{ broken")
        refused = await host.run(action="reload")
        assert refused.is_error and "was not reloaded (the previous one stays in use)" in text(refused)
        assert refused.details["error"] == "error"
        assert await pid_of(host, "fx") != pid  # the reconnect reset it; the broken file changed nothing
        wrong = await host.run(action="reload", nonsense=1)
        assert wrong.is_error and "invalid mcp tool input" in text(wrong)
    assert fixture_children() == []
