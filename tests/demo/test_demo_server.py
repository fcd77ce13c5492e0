"""The embedded demo server's answers, as `hostlink demo` and the docs' examples show them: its tools,
resources, prompt and completions over the SDK's in-memory transport (the stdio process is covered by
the CLI's and the gateway's end-to-end tests)."""

from __future__ import annotations

import base64

import pytest
from mcp import Client
from mcp_types import PromptReference, ResourceTemplateReference

from hostlink.demo.server import server

pytestmark = pytest.mark.anyio


def _text(result):
    return "".join(block.text for block in result.content if block.type == "text")


async def test_the_tools_answer_and_fail_as_documented():
    async with Client(server) as client:
        assert _text(await client.call_tool("echo", {"text": "hi"})) == "hi"
        assert _text(await client.call_tool("add", {"a": 2, "b": 40})) == "42"
        lines = _text(await client.call_tool("big_output", {"lines": 3})).splitlines()
        assert lines == [f"line {n}: the quick brown fox jumps over the lazy dog" for n in range(3)]
        assert _text(await client.call_tool("app_refresh", {})) == "refreshed"
        failed = await client.call_tool("fail", {})
        assert failed.is_error and _text(failed) == "Error executing tool fail: the demo tool failed on purpose"
        for name, arguments, message in (("big_output", {"lines": -1}, "lines must be between 0 and 1000000"),
                                         ("swatch", {"size": 0}, "size must be between 1 and 256")):  # fmt: skip
            refused = await client.call_tool(name, arguments)
            assert refused.is_error and _text(refused) == f"Error executing tool {name}: {message}"


async def test_the_swatch_is_a_png_of_the_asked_size():
    async with Client(server) as client:
        (image,) = (await client.call_tool("swatch", {"size": 4})).content
    assert image.type == "image" and image.mime_type == "image/png"
    png = base64.b64decode(image.data)
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert int.from_bytes(png[16:20], "big") == int.from_bytes(png[20:24], "big") == 4  # IHDR width, height


async def test_resources_prompt_and_completion():
    async with Client(server) as client:
        readme = await client.read_resource("demo://readme")
        assert readme.contents[0].text.startswith("hostlink demo server: tools echo, add")
        colour = await client.read_resource("demo://colour/azure")
        assert colour.contents[0].text == "azure is one of the demo colours\n"
        with pytest.raises(Exception, match="unknown colour; known: amber, azure"):
            await client.read_resource("demo://colour/mauve")
        prompt = await client.get_prompt("poem", {"colour": "ivory"})
        assert prompt.messages[0].content.text == "Write a four-line poem about the colour ivory."
        template = ResourceTemplateReference(type="ref/resource", uri="demo://colour/{name}")
        assert (await client.complete(template, {"name": "name", "value": "a"})).completion.values == ["amber", "azure"]
        poem = PromptReference(type="ref/prompt", name="poem")
        assert (await client.complete(poem, {"name": "colour", "value": "i"})).completion.values == ["indigo", "ivory"]
        assert (await client.complete(poem, {"name": "mood", "value": "i"})).completion.values == []
