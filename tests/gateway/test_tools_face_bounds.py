"""The gateway's tools face under its size bounds, in process over the module's real fixture
server over HTTP (`web`: what the face decides does not depend on the server's transport, and a
server per test costs ~0.7 s of CPU): a tool whose schemas are too large is left out with a
warning naming it, a listing that reaches its bound offers the tools before it and says how many
were left out, and a prompt never listed is unknown by name."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from hostlink.gateway import tools_face
from hostlink.gateway.tools_face import ToolsFace, Unknown
from hostlink.mcp.config.schema import parse_server
from hostlink.mcp.extension import McpExtension
from mcp_runtime_support import Host, Notes, live_children

pytestmark = pytest.mark.anyio


@pytest.fixture
async def runtime(web, tmp_path, runtime_dir):
    extension = McpExtension(servers={"fx": web.config()})
    async with Host(extension, tmp_path):
        yield extension.runtime


async def test_bounded_schemas_and_listing_each_leave_tools_out_and_say_so(runtime, monkeypatch):
    everything = [tool.name for tool in await ToolsFace().list_tools(runtime, Notes())]
    sizes = {f"fx__{tool.name}": len(json.dumps([tool.input_schema, tool.output_schema], default=str))
             for tool in await runtime.search_tools("fx")}
    bound = sizes["fx__echo"] - 1
    notes = Notes()
    monkeypatch.setattr(tools_face, "MAX_SCHEMA_BYTES", bound)
    small = [tool.name for tool in await ToolsFace().list_tools(runtime, notes)]
    assert small == [name for name in everything if sizes[name] <= bound] and small and "fx__echo" not in small
    assert ("warning", f"tool 'echo' of MCP server 'fx' left out: its schemas have {bound + 1} bytes "
                       f"(at most {bound})") in notes.seen

    monkeypatch.setattr(tools_face, "MAX_SCHEMA_BYTES", 64 * 1024)
    monkeypatch.setattr(tools_face, "MAX_LISTING_BYTES", 1024)
    notes, face = Notes(), ToolsFace()
    offered = await face.list_tools(runtime, notes)
    assert 0 < len(offered) < len(everything) and set(face.tools) == {tool.name for tool in offered}
    assert notes.seen[-1] == ("warning", f"{len(everything) - len(offered)} tools left out: the listing reached 1 KiB "
                                         "(the proxy face has no such limit)")


async def test_a_prompt_never_listed_is_unknown_by_name(runtime):
    face = ToolsFace()
    await face.list_prompts(runtime, Notes())
    assert face.prompt("fx__greet")[0] == "fx"
    with pytest.raises(Unknown, match=r"^Unknown prompt: fx__nope \(not among the prompts listed\)$"):
        face.prompt("fx__nope")


async def test_a_name_more_than_one_server_prefixes_or_whose_server_fails_is_looked_up_in_every_listing(
        web, tmp_path, runtime_dir):
    """Server `a` and server `a__b` both prefix `a__b__echo`: it is found by listing every
    server; a server that cannot start leaves its names unknown, with a warning naming it, and
    the resources of a server that offers none are not asked for."""
    tasks_only = Path(__file__).parents[1] / "fakes" / "mcp_task_server_legacy.py"
    servers = {"a": web.config(), "a__b": web.config(), "down": parse_server({"command": str(tmp_path / "missing")}),
               "jobs": parse_server({"command": sys.executable, "args": [str(tasks_only), "ok"],
                                     "protocolVersion": "legacy"})}
    extension = McpExtension(servers=servers)
    async with Host(extension, tmp_path):
        runtime = extension.runtime
        notes, face = Notes(), ToolsFace()
        await face.resolve_tool(runtime, notes, "a__b__echo")
        assert face.tool("a__b__echo") == ("a__b", "echo")
        notes, face = Notes(), ToolsFace()
        await face.resolve_tool(runtime, notes, "down__echo")
        with pytest.raises(Unknown, match=r"^Unknown tool: down__echo "):
            face.tool("down__echo")
        assert any(level == "warning" and "MCP server 'down' left out" in said for level, said in notes.seen)
        notes = Notes()
        listed = {str(item.uri).split("/")[2] for item in await face.list_resources(runtime, notes)}
        assert listed == {"a", "a__b"}
        assert [said for _, said in notes.seen if "resources" in said and "'jobs'" in said] == []
        assert any("resources of MCP server 'down' left out" in said for _, said in notes.seen)
    assert live_children(str(tasks_only)) == []  # its one stdio server stopped
