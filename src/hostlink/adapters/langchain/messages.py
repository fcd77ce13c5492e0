"""LangChain messages and tools as a hostlink `Context`, and the provider's answer back as
an `AIMessage`.

What Claude Code cannot take (audio, files, an image behind a web URL, a message type it
has no place for) is a `ValueError` naming it, never silently dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.ai import InputTokenDetails, UsageMetadata
from langchain_core.utils.function_calling import convert_to_openai_tool

from hostlink.host import (
    IMAGE_MIME_TYPES,
    AssistantContent,
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolDefinition,
    ToolResultMessage,
    Usage,
    UserContent,
    UserMessage,
)

_DATA_URL = re.compile(r"data:(?P<mime>[\w/+.-]+);base64,(?P<data>.*)", re.DOTALL)


def context_of(messages: Sequence[BaseMessage]) -> Context:
    """The Context of one request: system messages as the system prompt, the rest in order."""
    system: list[str] = []
    conversation: list[Message] = []
    names: dict[str, str] = {}  # tool call id -> tool name, for the results
    for message in messages:
        if isinstance(message, SystemMessage):
            system.append("".join(_texts(message.content, "a system message")))
        elif isinstance(message, HumanMessage):
            conversation.append(UserMessage(tuple(_user_content(message.content, "a human message"))))
        elif isinstance(message, AIMessage):
            content = list(_assistant_content(message))
            names.update((call.id, call.name) for call in content if isinstance(call, ToolCall))
            if content:
                conversation.append(AssistantMessage(tuple(content)))
        elif isinstance(message, ToolMessage):
            name = names.get(message.tool_call_id) or message.name or "tool"
            result = tuple(_user_content(message.content, "a tool message"))
            conversation.append(ToolResultMessage(message.tool_call_id, name, result, message.status == "error"))
        else:
            raise ValueError(f"Claude Code cannot take a {type(message).__name__} in the messages")
    return Context("\n\n".join(text for text in system if text), tuple(conversation))


def tool_definitions(tools: Sequence[Any]) -> list[ToolDefinition]:
    """LangChain tools, pydantic models, functions and dicts (OpenAI or Anthropic form) as
    the proposal catalog, by LangChain's own conversion."""
    definitions = []
    for tool in tools:
        function = convert_to_openai_tool(tool)["function"]
        parameters = function.get("parameters") or {"type": "object", "properties": {}}
        definitions.append(ToolDefinition(function["name"], function.get("description", ""), parameters))
    return definitions


def _texts(content: str | list[Any], where: str) -> Iterator[str]:
    for item in _user_content(content, where):
        if not isinstance(item, TextContent):
            raise ValueError(f"Claude Code takes only text in {where}")
        yield item.text


def _user_content(content: str | list[Any], where: str) -> Iterator[UserContent]:
    if isinstance(content, str):
        yield TextContent(content)
        return
    for block in content:
        if isinstance(block, str):
            yield TextContent(block)
        elif isinstance(block, Mapping) and block.get("type") == "text":
            yield TextContent(str(block.get("text", "")))
        elif isinstance(block, Mapping) and block.get("type") in ("image", "image_url"):
            yield _image(block)
        else:
            kind = block.get("type") if isinstance(block, Mapping) else type(block).__name__
            raise ValueError(f"Claude Code cannot take a {str(kind)[:40]!r} block in {where}; text and images only")


def _image(block: Mapping[str, Any]) -> ImageContent:
    """An image block in any of LangChain's forms: OpenAI's `image_url` with a data URL,
    the standard `image` block with `base64` (or `source_type: base64` and `data`), or
    Anthropic's `source`."""
    url = block.get("image_url")
    if isinstance(url, Mapping):
        url = url.get("url")
    url = url or block.get("url")
    source = block.get("source")
    source = source if isinstance(source, Mapping) else {}
    if isinstance(url, str):
        match = _DATA_URL.fullmatch(url)
        if match is None:
            raise ValueError("Claude Code takes images as data, not as a web URL: pass base64 data or a data: URL")
        mime, data = match["mime"], match["data"]
    else:
        mime = block.get("mime_type") or source.get("media_type")
        data = block.get("base64") or (block.get("data") if block.get("source_type", "base64") == "base64" else None)
        data = data or source.get("data")
    if not isinstance(data, str) or not data:
        raise ValueError("an image block without base64 data (Claude Code takes images as data)")
    if mime not in IMAGE_MIME_TYPES:
        raise ValueError(f"Claude Code cannot take an image of type {str(mime)[:40]!r}; "
                         f"one of {', '.join(sorted(IMAGE_MIME_TYPES))}")
    return ImageContent(data, mime)


def _assistant_content(message: AIMessage) -> Iterator[AssistantContent]:
    content = message.content
    if isinstance(content, str):
        if content:
            yield TextContent(content)
    else:
        for block in content:
            if isinstance(block, str):
                yield TextContent(block)
            elif isinstance(block, Mapping) and block.get("type") == "text":
                yield TextContent(str(block.get("text", "")))
            elif isinstance(block, Mapping) and block.get("type") in ("reasoning", "thinking"):
                yield ThinkingContent(str(block.get("reasoning") or block.get("thinking") or ""))
            # Tool-use blocks repeat `tool_calls`, which follow.
    for call in message.tool_calls:
        yield ToolCall(call["id"] or "", call["name"], call["args"])


def ai_content(message: AssistantMessage) -> str | list[str | dict[str, Any]]:
    """Text alone as a string; with thinking, standard `reasoning` and `text` blocks."""
    if not any(isinstance(part, ThinkingContent) for part in message.content):
        return "".join(part.text for part in message.content if isinstance(part, TextContent))
    blocks: list[str | dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, ThinkingContent):
            blocks.append({"type": "reasoning", "reasoning": part.thinking})
        elif isinstance(part, TextContent):
            blocks.append({"type": "text", "text": part.text})
    return blocks


def tool_calls(message: AssistantMessage) -> list[dict[str, Any]]:
    return [{"type": "tool_call", "id": part.id, "name": part.name, "args": dict(part.arguments)}
            for part in message.content if isinstance(part, ToolCall)]


def usage_metadata(usage: Usage) -> UsageMetadata:
    """LangChain counts cached tokens inside `input_tokens`; the details apart."""
    total_input = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
    details = InputTokenDetails(cache_read=usage.cache_read_tokens, cache_creation=usage.cache_write_tokens)
    return UsageMetadata(input_tokens=total_input, output_tokens=usage.output_tokens,
                         total_tokens=total_input + usage.output_tokens, input_token_details=details)


def ai_message(message: AssistantMessage, metadata: dict[str, Any]) -> AIMessage:
    return AIMessage(content=ai_content(message), tool_calls=tool_calls(message),
                     usage_metadata=usage_metadata(message.usage), response_metadata=metadata)


def last_chunk(message: AssistantMessage, metadata: dict[str, Any]) -> AIMessageChunk:
    """The stream's closing chunk: no content (the deltas carried it), the usage and metadata."""
    return AIMessageChunk(content="", usage_metadata=usage_metadata(message.usage), response_metadata=metadata,
                          chunk_position="last")
