"""Roots: offered only to a server that opted in ("roots": true), only in a trusted project.

The fixture server's `roots` tool reports what the client advertised, what `roots/list`
answered and how many `notifications/roots/list_changed` it heard — a real SDK server: the
module's one server over HTTP (`web`), and once over stdio, as hostlink starts it. Roots belong
to the handshake-era protocol (2026-07-28 deprecates them and gives a server no back-channel to
ask), so the servers that ask are configured `legacy`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from hostlink.mcp.config.schema import SchemaError, parse_server
from hostlink.mcp.extension import McpExtension
from hostlink.mcp.runtime.clients import McpRuntime
from mcp_runtime_support import Host, text

pytestmark = pytest.mark.anyio
FIXTURE = str(Path(__file__).parents[1] / "fakes" / "mcp_fixture_server.py")


def fixture(**fields):
    return parse_server({"command": sys.executable, "args": [FIXTURE], "protocolVersion": "legacy", **fields})


def shared(web, **fields):
    """The module's HTTP fixture server, configured as `fixture` would be."""
    return web.config(**{"protocolVersion": "legacy", **fields})


async def seen(runtime: McpRuntime, name: str = "f") -> dict:
    result = await runtime.call_tool(name, "roots", {})
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)


async def test_a_trusted_project_offers_its_directory_as_the_one_root(tmp_path, web):
    project = tmp_path / "project"
    project.mkdir()
    runtime = McpRuntime({"f": fixture(roots=True), "g": shared(web)}, root=project)
    try:
        assert await seen(runtime) == {"capability": True, "roots": [project.resolve().as_uri()], "changed": 0}
        assert (await seen(runtime, "g"))["capability"] is False  # the other server did not opt in
    finally:
        await runtime.aclose()


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_no_capability_without_the_opt_in_or_without_trust(tmp_path, mode, web):
    cases = {"untrusted": (shared(web, roots=True, protocolVersion=mode), None),
             "default": (shared(web, protocolVersion=mode), tmp_path)}
    for name, (config, root) in cases.items():
        runtime = McpRuntime({"f": config}, root=root)
        try:
            assert await seen(runtime) == {"capability": False, "roots": None, "changed": 0}, name
        finally:
            await runtime.aclose()


@pytest.mark.parametrize("trusted", [True, False])
async def test_the_host_sessions_trust_decides(tmp_path, trusted, web):
    async with Host(McpExtension(servers={"f": shared(web, roots=True)}), tmp_path, trusted=trusted) as host:
        result = await host.run(action="call", server="f", tool="roots", args={})
        assert not result.is_error
        answer = json.loads(text(result).splitlines()[0])
    assert answer["roots"] == ([tmp_path.resolve().as_uri()] if trusted else None)


def test_roots_is_a_strict_boolean():
    assert fixture().roots is False
    with pytest.raises(SchemaError, match="roots: Input should be a valid boolean"):
        fixture(roots="yes")
