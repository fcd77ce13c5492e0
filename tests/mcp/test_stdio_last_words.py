"""What a person is told when a stdio server exits during setup after a known complaint on stderr:
a fixed phrase for the kind (a missing command, a denied permission), never the raw text. Real
processes (sh), since the child's stderr and exit are what is under test."""

from __future__ import annotations

import pytest

from hostlink.mcp.config.schema import parse_server
from hostlink.mcp.extension import McpExtension
from mcp_runtime_support import Host, text

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(("said", "told"), [
    ("npx: @acme/srv: command not found", "the server reported a missing command or file"),
    ("open /home/me/.srv/key.pem: Permission denied", "the server reported permission denied"),
])
async def test_a_known_complaint_before_exiting_is_told_as_its_kind(tmp_path, runtime_dir, said, told):
    server = parse_server({"command": "sh", "args": ["-c", f"echo '{said}' >&2; exit 1"]})
    async with Host(McpExtension(servers={"srv": server}), tmp_path) as host:
        result = await host.run(action="tools", server="srv")
    assert result.is_error
    assert text(result) == f"MCP server 'srv' closed the connection during setup: {told}"
