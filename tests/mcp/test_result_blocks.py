"""What the model sees of content blocks the fixture servers do not send: a blob resource that
is an image, a structured copy repeated in two text blocks (issue 37's rules, block by block)."""

from __future__ import annotations

import mcp_types

from hostlink.host import ImageContent, TextContent
from hostlink.mcp.results import call_content, content_blocks

PNG = "iVBORw0KGgo="


def test_an_embedded_image_blob_is_an_image_announced_by_one_line():
    blob = mcp_types.BlobResourceContents(uri="file:///a.png", mime_type="image/png", blob=PNG)
    shown = content_blocks([mcp_types.EmbeddedResource(type="resource", resource=blob)])
    assert shown == [TextContent("[resource file:///a.png (image/png), image follows]"), ImageContent(PNG, "image/png")]


def test_a_structured_copy_in_two_text_blocks_is_shown_once():
    result = mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text='{"a": 1}'),
                                               mcp_types.TextContent(type="text", text='{"a":1}'),
                                               mcp_types.TextContent(type="text", text="done")],
                                      structured_content={"a": 1})
    assert call_content(result, '{"a":1}') == [TextContent('{"a":1}'), TextContent("done")]
