"""The Anthropic Messages wire format (`POST /v1/messages`) on the shared core.

Request fields read: `model`, `max_tokens` (the answer's cap, honoured), `system`
(string or text blocks), `messages` (text, base64 image, `tool_use`, `tool_result` with
text/image/`tool_reference` content and `is_error`, `thinking`; a `system` message anywhere),
`tools` (custom tools with `input_schema`; `defer_loading` as tool search has it,
`hostlink.serve.tool_search`), `tool_choice`, `output_config` (`effort`, `format`),
`thinking`, `metadata`, `stream`, `stop_sequences` (honoured by cutting the answer,
`hostlink.serve.stops`). Sampling fields go through `hostlink.serve.options`.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from typing import Any

from hostlink.host import (
    AssistantContent,
    AssistantMessage,
    Context,
    Done,
    ErrorEvent,
    ProviderSpec,
    StreamEvent,
    TextContent,
    TextDelta,
    ThinkingContent,
    ThinkingDelta,
    ToolCall,
    ToolCallEvent,
    UserContent,
)
from hostlink.serve import options, stops, structured, tool_search
from hostlink.serve.core import (
    ApiError,
    ConversationBuilder,
    ToolChoice,
    field,
    image,
    invalid,
    objects,
    one_of,
    provider_error,
    resolve_model,
    tool_definition,
    usage_numbers,
)
from hostlink.serve.parsed import Parsed

ERROR_TYPES = {"invalid_request": "invalid_request_error", "authentication": "authentication_error",
               "permission": "permission_error", "not_found": "not_found_error",
               "model_not_found": "not_found_error", "too_large": "request_too_large",
               "rate_limit": "rate_limit_error", "api": "api_error", "overloaded": "overloaded_error"}
_STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "toolUse": "tool_use"}




def error_body(error: ApiError) -> dict[str, Any]:
    return {"type": "error", "error": {"type": ERROR_TYPES.get(error.kind, "api_error"), "message": error.message}}


def parse(payload: dict[str, Any], provider: ProviderSpec) -> Parsed:
    model = resolve_model(provider, field(payload, "model", str, "", required=True))
    max_tokens = field(payload, "max_tokens", int, "", required=True)
    generation = options.anthropic_settings(payload, model, max_tokens)
    field(payload, "metadata", dict, "")
    stream = field(payload, "stream", bool, "", default=False)
    context = conversation(payload)
    output = _output_format(payload)
    stop = stops.sequences(payload.get("stop_sequences"), "stop_sequences", listed_only=True, limit=stops.MAX_LISTED)
    if stop and output is not None:
        raise invalid("stop_sequences", "stop sequences cannot cut an answer that must be JSON; leave one of them out")
    settings = replace(generation, stop_sequences=stop)
    return Parsed(model, payload["model"], structured.apply(replace(context, settings=settings), output), stream,
                  output=output)


def count_tokens_context(payload: dict[str, Any], provider: ProviderSpec) -> Context:
    """`POST /v1/messages/count_tokens`: the conversation the same message request would send."""
    resolve_model(provider, field(payload, "model", str, "", required=True))
    return structured.apply(conversation(payload), _output_format(payload))


def _output_format(payload: dict[str, Any]) -> structured.OutputFormat | None:
    """`output_config.format` (`{"type": "json_schema", "schema": …}`)."""
    config = field(payload, "output_config", dict, "", default={})
    fmt = field(config, "format", dict, "output_config")
    if fmt is None:
        return None
    one_of(fmt.get("type"), ("json_schema",), "output_config.format.type")
    return structured.OutputFormat.of("output_config.format", field(fmt, "schema", dict, "output_config.format",
                                                                    required=True), "output_config.format")


def conversation(payload: dict[str, Any]) -> Context:
    """`system`, `messages` (a `system` message anywhere is folded in where it stands), `tools`."""
    builder = ConversationBuilder()
    system = payload.get("system")
    if isinstance(system, str):
        builder.add_system(system)
    elif system is not None:
        for path, block in objects(system, "system"):
            one_of(block.get("type"), ("text",), f"{path}.type")
            builder.add_system(field(block, "text", str, path, required=True))
    references: dict[str, str] = {}  # the tools tool_reference blocks name -> where
    for path, message in objects(field(payload, "messages", list, "", required=True), "messages"):
        role = one_of(message.get("role"), ("user", "assistant", "system"), f"{path}.role")
        blocks = _blocks(message.get("content"), f"{path}.content")
        if role == "system":
            builder.add_instruction("\n\n".join(_texts(blocks)), role)
        elif role == "user":
            _user(builder, blocks, path, references)
        else:
            builder.add_assistant(_assistant(blocks), path)
    tools = [
        (tool_definition(tool.get("name"), tool.get("description"), tool.get("input_schema"), tpath),
         field(tool, "defer_loading", bool, tpath, default=False))
        for tpath, tool in objects(field(payload, "tools", list, "", default=[]), "tools")
        if _custom_tool(tool, tpath)
    ]
    choice = payload.get("tool_choice")
    if isinstance(choice, dict) and field(choice, "disable_parallel_tool_use", bool, "tool_choice", default=False):
        builder.add_system(options.ONE_CALL)
    return builder.build(tool_search.offered(tools, references), _tool_choice(choice))


def _texts(blocks: list[tuple[str, dict[str, Any]]]) -> list[str]:
    texts = []
    for bpath, block in blocks:
        one_of(block["type"], ("text",), f"{bpath}.type")
        texts.append(field(block, "text", str, bpath, required=True))
    return texts


def _custom_tool(tool: dict[str, Any], path: str) -> bool:
    tool_search.refuse_server_search(tool.get("type"), path)
    if tool.get("type") not in (None, "custom"):
        raise invalid(f"{path}.type", "only custom tools (name, description, input_schema) are supported")
    if not isinstance(tool.get("input_schema"), dict):
        raise invalid(f"{path}.input_schema", "field required")
    return True


def _tool_choice(value: Any) -> ToolChoice:
    if value is None:
        return ToolChoice()
    if not isinstance(value, dict):
        raise invalid("tool_choice", "expected an object")
    mode = one_of(value.get("type"), ("auto", "any", "tool", "none"), "tool_choice.type")
    if mode == "tool":
        return ToolChoice("tool", field(value, "name", str, "tool_choice", required=True))
    return ToolChoice(mode)


def _blocks(content: Any, path: str) -> list[tuple[str, dict[str, Any]]]:
    if isinstance(content, str):
        return [(path, {"type": "text", "text": content})]
    blocks = objects(content, path)
    for bpath, block in blocks:
        if not isinstance(block.get("type"), str):
            raise invalid(f"{bpath}.type", "field required")
    return blocks


def _user_content(path: str, block: dict[str, Any]) -> UserContent:
    kind = one_of(block["type"], ("text", "image"), f"{path}.type")
    if kind == "text":
        return TextContent(field(block, "text", str, path, required=True))
    source = field(block, "source", dict, path, required=True)
    one_of(source.get("type"), ("base64",), f"{path}.source.type")
    return image(source.get("data"), source.get("media_type"), f"{path}.source")


def _user(builder: ConversationBuilder, blocks: list[tuple[str, dict[str, Any]]], path: str,
          references: dict[str, str]) -> None:
    content: list[UserContent] = []
    for bpath, block in blocks:
        if block["type"] == "tool_result":
            result = block.get("content")
            parts = _blocks(result, f"{bpath}.content") if result is not None else []
            items = [tool_search.reference(b, p, references) if b["type"] == "tool_reference" else _user_content(p, b)
                     for p, b in parts]
            is_error = field(block, "is_error", bool, bpath, default=False)
            builder.add_tool_result(block.get("tool_use_id"), items, is_error, bpath)
        else:
            content.append(_user_content(bpath, block))
    if content or not any(block["type"] == "tool_result" for _, block in blocks):
        builder.add_user(content, path)


def _assistant(blocks: list[tuple[str, dict[str, Any]]]) -> list[AssistantContent]:
    content: list[AssistantContent] = []
    for bpath, block in blocks:
        kind = one_of(block["type"], ("text", "thinking", "redacted_thinking", "tool_use"), f"{bpath}.type")
        if kind == "text":
            content.append(TextContent(field(block, "text", str, bpath, required=True)))
        elif kind == "thinking":
            content.append(ThinkingContent(field(block, "thinking", str, bpath, required=True)))
        elif kind == "tool_use":
            call_id = field(block, "id", str, bpath, required=True)
            name = field(block, "name", str, bpath, required=True)
            content.append(ToolCall(call_id, name, field(block, "input", dict, bpath, required=True)))
    return content


# --- answers ---------------------------------------------------------------------------


def _usage(message: AssistantMessage) -> dict[str, int]:
    tokens_in, tokens_out, cache_read, cache_write = usage_numbers(message)
    return {"input_tokens": tokens_in, "output_tokens": tokens_out, "cache_read_input_tokens": cache_read,
            "cache_creation_input_tokens": cache_write}


def _block(part: AssistantContent) -> dict[str, Any]:
    if isinstance(part, TextContent):
        return {"type": "text", "text": part.text}
    if isinstance(part, ThinkingContent):
        return {"type": "thinking", "thinking": part.thinking, "signature": ""}
    return {"type": "tool_use", "id": part.id, "name": part.name, "input": dict(part.arguments)}


def _message_id() -> str:
    return "msg_" + uuid.uuid4().hex[:24]


def _stop(done: AssistantMessage) -> dict[str, Any]:
    """`stop_reason` and `stop_sequence` (the sequence the answer was cut at, if it was)."""
    reason = "stop_sequence" if done.stop_sequence is not None else _STOP_REASONS[done.stop_reason]
    return {"stop_reason": reason, "stop_sequence": done.stop_sequence}


def message(parsed: Parsed, done: AssistantMessage) -> dict[str, Any]:
    return {"id": _message_id(), "type": "message", "role": "assistant", "model": parsed.model_name,
            "content": [_block(part) for part in done.content], **_stop(done), "usage": _usage(done)}


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


class Streamer:
    """Provider events -> the Messages API's SSE event sequence."""

    def __init__(self, parsed: Parsed) -> None:
        self._parsed = parsed
        self._index = -1
        self._open: str | None = None  # the type of the open content block

    def opening(self) -> bytes:
        start: dict[str, Any] = {
            "id": _message_id(), "type": "message", "role": "assistant", "model": self._parsed.model_name,
            "content": [], "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 0, "output_tokens": 0}}
        return _sse("message_start", {"type": "message_start", "message": start}) + _sse("ping", {"type": "ping"})

    def _start(self, block: dict[str, Any]) -> bytes:
        out = self._close()
        self._index += 1
        self._open = block["type"]
        return out + _sse("content_block_start", {"type": "content_block_start", "index": self._index,
                                                   "content_block": block})

    def _delta(self, delta: dict[str, Any]) -> bytes:
        return _sse("content_block_delta", {"type": "content_block_delta", "index": self._index, "delta": delta})

    def _close(self) -> bytes:
        if self._open is None:
            return b""
        self._open = None
        return _sse("content_block_stop", {"type": "content_block_stop", "index": self._index})

    def feed(self, event: StreamEvent) -> bytes:
        if isinstance(event, TextDelta) and event.delta:
            out = b"" if self._open == "text" else self._start({"type": "text", "text": ""})
            return out + self._delta({"type": "text_delta", "text": event.delta})
        if isinstance(event, ThinkingDelta) and event.delta:
            out = (b"" if self._open == "thinking"
                   else self._start({"type": "thinking", "thinking": "", "signature": ""}))
            return out + self._delta({"type": "thinking_delta", "thinking": event.delta})
        if isinstance(event, ToolCallEvent):
            call = event.tool_call
            out = self._start({"type": "tool_use", "id": call.id, "name": call.name, "input": {}})
            arguments = json.dumps(dict(call.arguments), ensure_ascii=False)
            return out + self._delta({"type": "input_json_delta", "partial_json": arguments}) + self._close()
        if isinstance(event, Done):
            usage = _usage(event.message)
            delta = {"type": "message_delta", "delta": _stop(event.message), "usage": usage}
            return self._close() + _sse("message_delta", delta) + _sse("message_stop", {"type": "message_stop"})
        if isinstance(event, ErrorEvent):
            return self.failed(provider_error(event))
        return b""

    def failed(self, error: ApiError) -> bytes:
        return _sse("error", error_body(error))
