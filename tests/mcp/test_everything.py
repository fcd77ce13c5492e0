"""The real reference server `@modelcontextprotocol/server-everything` driven through the `mcp` tool."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from hostlink.host import ImageContent
from hostlink.mcp.config.schema import parse_server
from hostlink.mcp.extension import McpExtension
from mcp_runtime_support import Host, alive, text

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ENTRY = Path(__file__).parents[2] / "node_modules/@modelcontextprotocol/server-everything/dist/index.js"
NODE = shutil.which("node")

if not (ENTRY.is_file() and NODE) and not os.environ.get("CI"):
    pytest.skip("npm peer @modelcontextprotocol/server-everything or node is not installed", allow_module_level=True)


@pytest.fixture
async def host(tmp_path, monkeypatch):
    monkeypatch.setenv("HOSTLINK_RUNTIME_DIR", str(tmp_path / "runtime"))
    servers = {"everything": parse_server({"command": NODE, "args": [str(ENTRY), "stdio"]})}
    async with Host(McpExtension(servers=servers), tmp_path) as running:
        yield running
        pid = running.extension.runtime.snapshot("everything").pid
    assert pid is None or not alive(pid)  # shutdown stopped the node process


async def call(host, tool, **args):
    return await host.run(action="call", server="everything", tool=tool, args=args)


async def test_tools_are_listed_and_searched(host):
    listing = text(await host.run(action="tools", server="everything", limit=50))
    for name in ("echo", "get-sum", "get-tiny-image", "get-structured-content", "get-resource-reference"):
        assert f"tool '{name}'" in listing
    assert '"required":["message"]' in listing  # echo's input schema, compact
    found = text(await host.run(action="tools", server="everything", query="SUM numbers"))
    assert "tool 'get-sum'" in found and "[tools 1-1 of 1]" in found
    snapshot = host.extension.runtime.snapshot("everything")
    assert snapshot.state == "connected" and snapshot.server_name == "mcp-servers/everything"
    assert snapshot.pid is not None


async def test_text_image_structured_and_error_results(host):
    echoed = await call(host, "echo", message="hello everything")
    assert not echoed.is_error and "hello everything" in text(echoed)
    total = await call(host, "get-sum", a=2, b=5)
    assert "7" in text(total)
    image = await call(host, "get-tiny-image")
    images = [item for item in image.content if isinstance(item, ImageContent)]
    assert len(images) == 1 and images[0].mime_type == "image/png" and len(images[0].data) > 100
    structured = await call(host, "get-structured-content", location="Chicago")
    value = json.loads(text(structured))  # one compact JSON text, not two copies
    assert set(value) == {"temperature", "conditions", "humidity"}
    assert text(structured).count("temperature") == 1
    failed = await call(host, "get-resource-reference", resourceType="Blob", resourceId=0)
    assert failed.is_error and "Invalid resourceId" in text(failed)
    wrong = await call(host, "get-sum", a="two", b=5)  # refused by the input schema before sending
    assert wrong.is_error and "input schema of tool 'get-sum'" in text(wrong)
    linked = await call(host, "get-resource-links", count=2)
    assert text(linked).count("[resource link: demo://") == 2


async def test_resources_are_listed_and_read(host):
    resources = text(await host.run(action="resources", server="everything", limit=3))
    assert resources.count("- demo://") == 3 and "next offset 3" in resources
    templates = text(await host.run(action="templates", server="everything"))
    assert "demo://resource/dynamic/text/{resourceId}" in templates
    read = text(await host.run(action="read", server="everything", uri="demo://resource/dynamic/text/1"))
    assert "Resource 1: This is a plaintext resource" in read
    blob = text(await host.run(action="read", server="everything", uri="demo://resource/dynamic/blob/1"))
    assert "base64 chars, not shown" in blob


async def test_prompts_are_listed_and_fetched(host):
    prompts = text(await host.run(action="prompts", server="everything"))
    assert "args-prompt(city, state?)" in prompts and "simple-prompt()" in prompts
    prompt = text(await host.run(action="prompt", server="everything", prompt="args-prompt", args={"city": "Oslo"}))
    assert "user:" in prompt and "Oslo" in prompt
    embedded = text(await host.run(action="prompt", server="everything", prompt="resource-prompt",
                                   args={"resourceType": "Text", "resourceId": "2"}))
    assert "[resource demo://resource/dynamic/text/2 (text/plain)]" in embedded


async def test_completion_is_used(host):
    department = text(await host.run(action="complete", server="everything", prompt="completable-prompt",
                                     argument="department", value="E"))
    assert "- Engineering" in department
    resource_id = text(await host.run(action="complete", server="everything",
                                      uri="demo://resource/dynamic/text/{resourceId}", argument="resourceId",
                                      value="1"))
    assert "- 1" in resource_id


async def test_its_task_tool_runs_in_the_2025_11_25_shape_asking_the_person_mid_way():
    """`simulate-research-query` requires a task; an ambiguous query asks for clarification
    while hostlink holds `tasks/result` open, and its status messages show as progress."""
    from hostlink.host import Answer
    from hostlink.host.progress import CallWatch, watching
    from hostlink.mcp.runtime.clients import McpRuntime
    from hostlink.mcp.runtime.elicitation import elicitation_for
    from mcp_runtime_support import Notes

    asked, seen = [], []

    async def ask(question):
        asked.append(question.message)
        return Answer(action="accept", content={"interpretation": "historical"})

    entry = {"command": NODE, "args": [str(ENTRY), "stdio"], "tasks": True, "elicitation": True}
    runtime = McpRuntime({"everything": parse_server(entry)}, elicitation=elicitation_for(ask, Notes()))
    try:
        with watching(CallWatch(listener=lambda _p, _t, message: seen.append(message))):
            report = await runtime.call_tool("everything", "simulate-research-query", {"topic": "tea",
                                                                                      "ambiguous": True})
        assert not report.is_error and text(report).startswith("# Research Report: tea")
        assert len(asked) == 1 and "multiple interpretations" in asked[0]
        assert "Gathering sources..." in seen and any("Requesting clarification" in message for message in seen)
    finally:
        await runtime.aclose()
