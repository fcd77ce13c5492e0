"""The `mcp` tool and the `/mcp` command of an extension whose host session never started: each
says the client is not running, and no server is touched; started without servers, status says so."""

from __future__ import annotations

import pytest

from hostlink.host import CancelSignal, CommandFailed, Registry
from hostlink.mcp.extension import McpExtension
from mcp_runtime_support import Host, fixture_children, stdio

pytestmark = pytest.mark.anyio


def registered():
    registry = Registry()
    McpExtension(servers={"fx": stdio()}).register(registry)
    return registry


async def test_the_tool_says_no_host_session_has_started():
    result = await registered().tools["mcp"].execute({"action": "status"}, CancelSignal())
    assert result.is_error
    assert [item.text for item in result.content] == ["the MCP client is not running (no host session has started)"]
    assert fixture_children() == []


@pytest.mark.parametrize("argv", [["status"], ["reload"]])
async def test_the_command_says_the_client_is_not_running(argv):
    with pytest.raises(CommandFailed, match=r"^the MCP client is not running$"):
        await registered().commands["mcp"].run(argv, CancelSignal())


async def test_a_started_host_without_servers_says_none_are_configured(tmp_path, runtime_dir):
    async with Host(McpExtension(servers={}), tmp_path) as host:
        said = await host.registry.commands["mcp"].run(["status"], CancelSignal())
    assert said == "no MCP servers are configured"
