"""Host results as MCP results: what the `mcp` tool made (already bounded and sanitized)
in the SDK's types for the proxy face; for the tools face, a call's result, resources and
prompts passed through as the server sent them under the same bounds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hostlink.host import ImageContent, ToolResult
from hostlink.host.output import MAX_IMAGE_BASE64, MAX_INLINE_IMAGES, bound_text, one_line, strip_controls

if TYPE_CHECKING:
    import mcp_types

    from hostlink.host.output import OutputSession


def call_result(result: ToolResult, *, structured: bool) -> mcp_types.CallToolResult:
    """`structured`: pass the call's structured content on (the tools face, where the
    tool may declare an output schema); the proxy face's text already carries it."""
    import mcp_types

    content: list[Any] = []
    for item in result.content:
        if isinstance(item, ImageContent):
            content.append(mcp_types.ImageContent(type="image", data=item.data, mime_type=item.mime_type))
        else:  # a host result holds text and images only
            content.append(mcp_types.TextContent(type="text", text=item.text))
    details = result.details or {}
    value = details.get("structuredContent") if structured and not result.is_error else None
    return mcp_types.CallToolResult(content=content, is_error=result.is_error,
                                    structured_content=value if isinstance(value, dict) else None)


def passed_through(result: ToolResult, output: OutputSession | None) -> mcp_types.CallToolResult:
    """The tools face: the server's result (the `mcp` tool's `result` detail) as it sent it:
    each content block in its place, its text sanitized and bounded, binary within the
    inline image bounds (else a one-line placeholder), `structuredContent` (up to 1 MiB)
    and `isError` as they were. A result hostlink made (no call was sent) is passed as is."""
    import mcp_types

    details = result.details or {}
    sent = details.get("result")
    if sent is None:
        return call_result(result, structured=True)
    images = [0]
    content = [_passed_block(block, output, images) for block in sent.content]
    structured = details.get("structuredContent")
    return mcp_types.CallToolResult(content=content, is_error=bool(sent.is_error),
                                    structured_content=structured if isinstance(structured, dict) else None)


def _passed_block(block: Any, output: OutputSession | None, images: list[int]) -> Any:
    """One content block under the output bounds (`images`: the count of images passed so far)."""
    import mcp_types

    kind = getattr(block, "type", None)
    if kind == "text":
        return block.model_copy(update={"text": bound_text(block.text, output)})
    if kind in ("image", "audio"):
        mime = one_line(block.mime_type, 100)
        if len(block.data) > MAX_IMAGE_BASE64 or (kind == "image" and images[0] >= MAX_INLINE_IMAGES):
            return mcp_types.TextContent(type="text", text=f"[{kind} {mime} of {len(block.data)} base64 "
                                                           "characters not passed on]")
        images[0] += kind == "image"
        return block.model_copy(update={"mime_type": mime})
    if kind == "resource_link":
        return block.model_copy(update={key: one_line(getattr(block, key), 1000) if getattr(block, key) else None
                                        for key in ("name", "title", "description", "mime_type")})
    # "resource": the SDK's types admit no other kind
    (passed,) = resource_contents([block.resource], str(block.resource.uri), output)
    return block.model_copy(update={"resource": passed})


def error_result(message: str) -> mcp_types.CallToolResult:
    import mcp_types

    return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=strip_controls(message))],
                                    is_error=True)


def resource_contents(contents: Sequence[Any], uri: str, output: OutputSession | None) -> list[Any]:
    """A read's contents under the requested (prefixed) URI: texts bounded, blobs within the
    inline image bound (a larger one is described instead)."""
    import mcp_types

    kept: list[Any] = []
    for content in contents:
        mime = one_line(content.mime_type, 100) if content.mime_type else None
        text = getattr(content, "text", None)
        if text is None and len(content.blob) > MAX_IMAGE_BASE64:
            text = f"[binary {mime or 'content'} of {len(content.blob)} base64 characters not passed on]"
        if text is not None:
            kept.append(mcp_types.TextResourceContents(uri=uri, mime_type=mime, text=bound_text(text, output)))
        else:
            kept.append(mcp_types.BlobResourceContents(uri=uri, mime_type=mime, blob=content.blob))
    return kept


def prompt_messages(messages: Sequence[Any], output: OutputSession | None) -> list[Any]:
    """A prompt's messages with every text bounded, an embedded resource as a read's contents
are; other content described in one line."""
    import mcp_types

    kept = []
    for message in messages:
        block = message.content
        if getattr(block, "type", None) == "text":
            block = mcp_types.TextContent(type="text", text=bound_text(block.text, output))
        elif getattr(block, "type", None) == "image" and len(block.data) <= MAX_IMAGE_BASE64:
            pass
        elif getattr(block, "type", None) == "resource":
            (contents,) = resource_contents([block.resource], str(block.resource.uri), output)
            block = block.model_copy(update={"resource": contents})
        else:
            kind = one_line(str(getattr(block, "type", "unknown")), 40)
            block = mcp_types.TextContent(type="text", text=f"[{kind} content not passed on]")
        kept.append(mcp_types.PromptMessage(role=message.role, content=block))
    return kept
