"""`hostlink mcp serve` and what it hands on of a server's answers (issue 37), driven by the
SDK's client: the tools face passes a result through as the server sent it,
the proxy face shows each piece once and in order, prompts and completions need no listing
first, a request starts only the server its name belongs to, and what a server does not have
is no warning. The gateway runs in this process over the SDK's memory streams, and as the
command over real stdio where its process is the point: a host that speaks JSON-RPC itself,
and what reaches its stderr. The upstream servers of the in-process tests are one per module,
over HTTP; the command's own start them as its children."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import MCPError

from gateway_support import (
    HOSTLINK,
    fixture,
    gateway_env,
    gateway_in_process,
    leftovers,
    live_mentioning,
    stdio_gateway,
)
from mcp_runtime_support import http_fixture
from process_support import started

pytestmark = pytest.mark.anyio
RESULTS = Path(__file__).parents[1] / "fakes" / "mcp_results_server.py"


def results() -> dict:
    return {"command": sys.executable, "args": [str(RESULTS)]}


@pytest.fixture(scope="module")
def rs_web():
    """The results server over HTTP, one for the tests about what the gateway hands on of its
    answers (a server per gateway costs ~0.7 s of CPU); it keeps nothing between calls."""
    with http_fixture(script=str(RESULTS)) as server:
        yield server


def text(result) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


def servers_running(tmp_path: Path, script: str) -> list[int]:
    """Live processes of this test running `script` (they inherit its HOME)."""
    return [pid for pid in live_mentioning(str(tmp_path))
            if script.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()]


async def test_the_tools_face_passes_a_result_through_as_the_server_sent_it(rs_web, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("hello from fs\n")
    picture = tmp_path / "photo.png"
    picture.write_bytes(os.urandom(3000))
    async with gateway_in_process(tmp_path, {"fs": {"url": rs_web.url}}, "tools") as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert listed["fs__failing"].annotations.title == "Fails loudly"  # the server's hint, its escapes gone
        assert listed["fs__failing"].annotations.read_only_hint is True
        read = await client.call_tool("fs__read_text_file", {"path": str(notes)})
        assert [block.type for block in read.content] == ["text"] and read.content[0].text == "hello from fs\n"
        assert read.structured_content == {"content": "hello from fs\n"} and not read.is_error
        media = await client.call_tool("fs__read_media_file", {"path": str(picture)})
        assert [block.type for block in media.content] == ["image"]
        assert base64.b64decode(media.content[0].data) == picture.read_bytes()
        mixed = await client.call_tool("fs__mixed", {})
        assert [(block.type, getattr(block, "text", None)) for block in mixed.content] == [
            ("text", "before"), ("image", None), ("text", "after")]
        failed = await client.call_tool("fs__failing", {})
        assert failed.is_error and text(failed) == "no such thing" and failed.structured_content == {"code": 404}
    assert live_mentioning(str(tmp_path)) == [] and leftovers(tmp_path) == []


async def test_the_proxy_face_shows_each_piece_once_in_order_and_no_base64(rs_web, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("hello from fs\n")
    picture = tmp_path / "photo.png"
    picture.write_bytes(os.urandom(3000))
    async with gateway_in_process(tmp_path, {"fs": {"url": rs_web.url}}) as client:
        def call(tool, **args):
            return client.call_tool("mcp", {"action": "call", "server": "fs", "tool": tool, "args": args})

        assert text(await call("read_text_file", path=str(notes))) == "hello from fs\n"
        media = await call("read_media_file", path=str(picture))
        assert [block.type for block in media.content] == ["image"]
        mixed = await call("mixed")
        assert [block.type for block in mixed.content] == ["text", "image", "text"]
        pictured = text(await call("pictured"))
        assert "base64 chars, not shown" in pictured and "iVBOR" not in pictured


async def test_prompts_and_completions_need_no_listing_first(rs_web, web, tmp_path):
    servers = {"rs": {"url": rs_web.url}, "fx": {"url": web.url}}
    async with gateway_in_process(tmp_path, servers, "tools") as client:
        got = await client.get_prompt("rs__hello")
        assert got.messages[0].content.text == "hello from hello"
    import mcp_types

    async with gateway_in_process(tmp_path, servers, "tools") as client:
        done = await client.complete(mcp_types.PromptReference(type="ref/prompt", name="fx__greet"),
                                     {"name": "name", "value": "A"})
        assert sorted(done.completion.values) == ["Ada", "Alan"]
        template = mcp_types.ResourceTemplateReference(type="ref/resource", uri="hostlink://fx/fixture://items/{item_id}")
        items = await client.complete(template, {"name": "item_id", "value": "b"})
        assert items.completion.values == ["beta"]  # the fixture's template, under the gateway's URI
        with pytest.raises(MCPError) as unknown:
            await client.get_prompt("fx__nope")
        assert unknown.value.error.message == "Unknown prompt: fx__nope (not among the prompts listed)"
        assert unknown.value.error.code == -32602
    assert live_mentioning(str(tmp_path)) == []


def test_a_call_or_a_prompt_starts_only_its_own_server(tmp_path):
    """A host that calls at once, without listing (the SDK's client lists before any call,
    so this one speaks JSON-RPC itself)."""
    servers = {"rs": results(), "fx": fixture(), "fy": fixture()}
    with started([HOSTLINK, "mcp", "serve", "--expose", "tools"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                 stderr=subprocess.DEVNULL, env=gateway_env(tmp_path, servers), cwd=tmp_path) as gateway:
        def ask(ident: int, method: str, params: dict | None = None) -> dict:
            message = {"jsonrpc": "2.0", "id": ident, "method": method, "params": params or {}}
            gateway.stdin.write(json.dumps(message).encode() + b"\n")
            gateway.stdin.flush()
            while True:
                answer = json.loads(gateway.stdout.readline())
                if answer.get("id") == ident:
                    return answer

        ask(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "t", "version": "1"}})
        gateway.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        called = ask(2, "tools/call", {"name": "rs__extra", "arguments": {}})
        assert called["result"]["structuredContent"] == {"id": 7, "ok": True}
        got = ask(3, "prompts/get", {"name": "rs__hello"})
        assert got["result"]["messages"][0]["content"]["text"] == "hello from hello"
        assert servers_running(tmp_path, "mcp_fixture_server.py") == []
        assert len(servers_running(tmp_path, "mcp_results_server.py")) == 1
        echoed = ask(4, "tools/call", {"name": "fx__echo", "arguments": {"text": "hi"}})
        assert echoed["result"]["content"] == [{"type": "text", "text": "hi"}]
        assert len(servers_running(tmp_path, "mcp_fixture_server.py")) == 1  # fx alone, not fy
        completed = ask(5, "completion/complete", {"ref": {"type": "ref/prompt", "name": "fx__greet"},
                                                   "argument": {"name": "name", "value": "A"}})
        assert sorted(completed["result"]["completion"]["values"]) == ["Ada", "Alan"]
        assert len(servers_running(tmp_path, "mcp_fixture_server.py")) == 1
        gateway.stdin.close()
        gateway.wait(timeout=30)
    assert live_mentioning(str(tmp_path)) == []


async def test_what_a_server_does_not_have_is_no_warning(tmp_path):
    errors = tmp_path / "stderr"
    with errors.open("w") as errlog:
        async with stdio_gateway(tmp_path, {"rs": results()}, "--expose", "tools", errlog=errlog) as client:
            resources = (await client.list_resources()).resources
            templates = (await client.list_resource_templates()).resource_templates
            assert [resource.name for resource in resources] == ["rs__note"] and templates == []
    said = errors.read_text()
    assert "left out" not in said and "Method not found" not in said, said
