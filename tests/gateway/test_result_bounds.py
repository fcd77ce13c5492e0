"""The tools face passes a server's blocks on under the output bounds: what a host sees of blocks
too large or too many, of a link's fields, and of prompt content it cannot carry inline."""

from __future__ import annotations

import mcp_types

from hostlink.gateway.results import passed_through, prompt_messages, resource_contents
from hostlink.host import ToolResult
from hostlink.host.output import MAX_IMAGE_BASE64, MAX_INLINE_IMAGES


def passed(*blocks):
    sent = mcp_types.CallToolResult(content=list(blocks))
    return passed_through(ToolResult(content=[], details={"result": sent}), None).content


def image(data="iVBORw0KGgo="):
    return mcp_types.ImageContent(type="image", data=data, mime_type="image/png")


def test_images_past_the_inline_count_are_described_not_passed():
    blocks = passed(*[image() for _ in range(MAX_INLINE_IMAGES + 1)])
    assert [block.type for block in blocks] == ["image"] * MAX_INLINE_IMAGES + ["text"]
    assert blocks[-1].text == "[image image/png of 12 base64 characters not passed on]"


def test_audio_larger_than_the_bound_is_described():
    audio = mcp_types.AudioContent(type="audio", data="A" * (MAX_IMAGE_BASE64 + 1), mime_type="audio/wav")
    (block,) = passed(audio)
    assert block.text == f"[audio audio/wav of {MAX_IMAGE_BASE64 + 1} base64 characters not passed on]"


def test_a_resource_links_fields_are_one_line_each():
    link = mcp_types.ResourceLink(type="resource_link", uri="file:///x", name="a\nb\x1b[2J", title="t\r\nu",
                                  description=None, mime_type="text/plain")
    (block,) = passed(link)
    assert (block.name, block.title, block.description, block.mime_type) == ("a b", "t u", None, "text/plain")
    assert str(block.uri) == "file:///x"


def test_a_binary_larger_than_the_bound_becomes_a_line_saying_so():
    blob = mcp_types.BlobResourceContents(uri="file:///big", mime_type="application/zip",
                                          blob="A" * (MAX_IMAGE_BASE64 + 1))
    (kept,) = resource_contents([blob], "fx+file:///big", None)
    assert kept.text == f"[binary application/zip of {MAX_IMAGE_BASE64 + 1} base64 characters not passed on]"
    assert str(kept.uri) == "fx+file:///big"


def test_prompt_content_that_cannot_be_inline_is_described():
    audio = mcp_types.AudioContent(type="audio", data="AAAA", mime_type="audio/wav")
    link = mcp_types.ResourceLink(type="resource_link", uri="file:///x", name="x")
    kept = prompt_messages([mcp_types.PromptMessage(role="user", content=audio),
                            mcp_types.PromptMessage(role="assistant", content=link)], None)
    assert [(message.role, message.content.text) for message in kept] == [
        ("user", "[audio content not passed on]"), ("assistant", "[resource_link content not passed on]")]
