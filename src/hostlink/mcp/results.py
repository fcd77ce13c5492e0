"""What the model and a person see of a server's results: content blocks as host content,
in the server's order, and a call's structured content shown only where it adds something.

Structured content is for programs and the content is for the model, with the JSON as its
compatibility copy (MCP's tool results); binary data never reaches the text, only a one-line
placeholder saying what it was.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from hostlink.host import ImageContent, TextContent
from hostlink.host.output import compact_json, one_line


def call_content(result: Any, compact: str | None) -> list[TextContent | ImageContent]:
    """What the model and a person see of a call: the server's content blocks in its order,
    each once, and the structured content only where it adds to them.

    Structured content is for programs and the content is for the model, with the JSON as
    its compatibility copy (MCP's tool results). So a text block that is the structured
    value as JSON is shown once, compact (`compact`, made once by the caller, binary data
    replaced by its one-line placeholder); structured content that a block carries — an
    object of one member whose value is a text block's text or JSON (the SDK's
    `{"result": …}`, a server's `{"content": "<text>"}`) or the content blocks themselves —
    is not shown at all; any other structured content comes first, compact.
    """
    items = content_blocks(result.content)
    structured = result.structured_content
    if compact is None:
        return items or [TextContent("(the tool returned no content)")]
    kept: list[TextContent | ImageContent] = []
    shown = False
    for item in items:
        if isinstance(item, TextContent) and _same_json(item.text, structured):
            if not shown:
                kept.append(TextContent(compact))
            shown = True
            continue
        kept.append(item)
    if not shown and not _carried(structured, result.content):
        kept.insert(0, TextContent(compact))
    return kept or [TextContent("(the tool returned no content)")]


def _carried(structured: Any, blocks: Sequence[Any]) -> bool:
    """Whether the structured content adds nothing beyond the content `blocks`."""
    if not (isinstance(structured, dict) and len(structured) == 1):
        return False
    (value,) = structured.values()
    texts = [block.text for block in blocks if getattr(block, "type", None) == "text"]
    if isinstance(value, str):
        return value in texts
    if any(_same_json(text, value) for text in texts):
        return True
    dumped = [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in blocks]
    return isinstance(value, list) and len(value) == len(dumped) and all(
        isinstance(entry, dict) and entry.get("type") == block["type"]
        and all(block.get(key) == item for key, item in entry.items() if item is not None)
        for entry, block in zip(value, dumped, strict=True))


def shown_structured(value: Any) -> str:
    """Structured content as compact JSON for the text, each binary part of it (an image or
    audio block's `data`, a `blob`) replaced by its one-line placeholder."""
    return compact_json(_without_binary(value))


def _without_binary(value: Any) -> Any:
    if isinstance(value, list):
        return [_without_binary(item) for item in value]
    if not isinstance(value, dict):
        return value
    mime = one_line(str(value.get("mimeType") or "unknown type"), 100)
    if value.get("type") in ("image", "audio") and isinstance(value.get("data"), str):
        return f"[{value['type']} {mime}, {len(value['data'])} base64 chars, not shown]"
    if isinstance(value.get("blob"), str):
        return f"[binary {mime}, {len(value['blob'])} base64 chars, not shown]"
    return {key: _without_binary(item) for key, item in value.items()}


def _same_json(text: str, value: Any) -> bool:
    try:
        return bool(json.loads(text) == value)
    except ValueError:
        return False


def content_blocks(blocks: Sequence[Any]) -> list[TextContent | ImageContent]:
    """MCP content blocks as host content; what cannot be inline is described in one line."""
    items: list[TextContent | ImageContent] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            items.append(TextContent(block.text))
        elif kind == "image":
            items.append(ImageContent(block.data, block.mime_type))
        elif kind == "audio":
            items.append(TextContent(f"[audio content omitted: {block.mime_type}, {len(block.data)} base64 chars]"))
        elif kind == "resource_link":
            items.append(TextContent(f"[resource link: {block.uri} ({one_line(block.name, 100)})]"))
        else:  # "resource": the SDK's types admit no other kind
            items.extend(resource_contents([block.resource]))
    return items


def resource_contents(contents: Sequence[Any]) -> list[TextContent | ImageContent]:
    items: list[TextContent | ImageContent] = []
    for content in contents:
        text = getattr(content, "text", None)
        mime = content.mime_type or "unknown type"
        if text is not None:
            items.append(TextContent(f"[resource {content.uri} ({mime})]\n{text}"))
        elif mime.startswith("image/"):
            items.append(TextContent(f"[resource {content.uri} ({mime}), image follows]"))
            items.append(ImageContent(content.blob, mime))
        else:
            items.append(TextContent(f"[resource {content.uri}: binary {mime}, {len(content.blob)} base64 "
                                     "chars, not shown]"))
    return items
