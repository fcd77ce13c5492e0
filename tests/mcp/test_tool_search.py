"""The `mcp` tool's search across servers, through the real host path and one fixture server over
real stdio: a server that cannot start is named as unavailable beside the others' tools, and an
offset past the end says how many there are."""

from __future__ import annotations

import pytest

from hostlink.mcp.extension import McpExtension
from mcp_runtime_support import Host, fixture_children, stdio, text

pytestmark = pytest.mark.anyio


@pytest.fixture
async def host(tmp_path, runtime_dir):
    servers = {"fx": stdio(), "gone": stdio().model_copy(update={"command": str(tmp_path / "no-such-server")})}
    async with Host(McpExtension(servers=servers), tmp_path) as running:
        yield running
    assert fixture_children() == []


async def test_a_server_that_cannot_start_is_named_beside_the_tools_found(host):
    result = await host.run(action="tools", query="echo")
    shown = text(result)
    assert "- server 'fx' tool 'echo'" in shown
    assert shown.splitlines()[-1] == "[unavailable: MCP server 'gone': command not found: 'no-such-server']"


async def test_an_offset_past_the_end_says_how_many_there_are(host):
    result = await host.run(action="tools", server="fx", offset=500)
    count = len([line for line in text(await host.run(action="tools", server="fx", limit=50)).splitlines()
                 if line.startswith("- server")])
    assert text(result) == f"[no tools at offset 500 (there are {count})]"
