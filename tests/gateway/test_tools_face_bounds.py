"""The gateway's tools face under its size bounds, over a real fixture server (stdio) in process:
a tool whose schemas are too large is left out with a warning naming it, a listing that reaches
its bound offers the tools before it and says how many were left out, and a prompt never listed
is unknown by name."""

from __future__ import annotations

import json

import pytest

from hostlink.gateway import tools_face
from hostlink.gateway.tools_face import ToolsFace, Unknown
from hostlink.mcp.extension import McpExtension
from mcp_runtime_support import Host, Notes, fixture_children, stdio

pytestmark = pytest.mark.anyio


@pytest.fixture
async def runtime(tmp_path, runtime_dir):
    extension = McpExtension(servers={"fx": stdio()})
    async with Host(extension, tmp_path):
        yield extension.runtime
    assert fixture_children() == []


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
