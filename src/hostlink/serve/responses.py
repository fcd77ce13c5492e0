"""The OpenAI Responses wire format (`POST /v1/responses`) on the shared core.

Request fields read: `model`, `instructions`, `input` (a string, or items: `message`
with roles user/assistant/system/developer and parts `input_text`, `input_image` as a
data URL, `output_text`, `refusal`; `function_call`; `function_call_output`;
`reasoning` — accepted, not sent to Claude; `item_reference`), `tools` of type
`function` (built-in tool types are not offered to Claude and do not fail the request),
`tool_choice`, `text.format` / `text.verbosity`, `reasoning.effort`,
`max_output_tokens`, `parallel_tool_calls`, `previous_response_id`, `store`,
`stream`. Sampling fields go through `hostlink.serve.options`; fields that cannot
change the answer (`include`, `prompt_cache_key`, `client_metadata`, `metadata`,
`truncation`, `service_tier`, `user`, `safety_identifier`, `reasoning.summary`)
are not read. Errors use OpenAI's shape; `hostlink.serve.responses_stream` streams answers.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, replace
from typing import Any

from hostlink.host import (
    AssistantContent,
    AssistantMessage,
    ProviderSpec,
    TextContent,
    ThinkingContent,
    ToolCall,
    UserContent,
)
from hostlink.serve import options, structured
from hostlink.serve.core import (
    ApiError,
    ConversationBuilder,
    field,
    image,
    invalid,
    objects,
    one_of,
    resolve_model,
    tool_definition,
    usage_numbers,
)
from hostlink.serve.openai import _DATA_URL, arguments_object, response_format, tool_choice
from hostlink.serve.parsed import Parsed
from hostlink.serve.response_store import ResponseStore

_UNSUPPORTED = ("background", "conversation", "prompt", "max_tool_calls")
_VERBOSITY = {"low": "Answer as briefly as the question allows.", "medium": None,
              "high": "Answer thoroughly, with detail."}


@dataclass(frozen=True)
class Exchange:
    """What a stored response keeps: the whole conversation up to and including its output."""

    response_id: str
    items: list[dict[str, Any]]  # the input items, references resolved (previous responses included)
    store: bool


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def parse(payload: dict[str, Any], provider: ProviderSpec, store: ResponseStore) -> Parsed:
    model = resolve_model(provider, field(payload, "model", str, "", required=True))
    for name in _UNSUPPORTED:
        if payload.get(name) not in (None, False):
            raise invalid(name, "not supported by this endpoint")
    options.refuse_non_defaults(payload, "responses")
    reasoning = field(payload, "reasoning", dict, "", default={})
    generation = options.settings(
        options.max_output(payload.get("max_output_tokens"), "max_output_tokens", model),
        options.openai_effort(reasoning.get("effort"), "reasoning.effort"))
    text = field(payload, "text", dict, "", default={})
    output = response_format(text.get("format"), "text.format")
    stream = field(payload, "stream", bool, "", default=False)
    keep = field(payload, "store", bool, "", default=True)
    items: list[dict[str, Any]] = []
    previous = field(payload, "previous_response_id", str, "")
    if previous is not None:
        items.extend(store.conversation(previous))
    given = payload.get("input")
    if isinstance(given, str):
        items.append({"type": "message", "role": "user", "content": given})
    else:
        for path, item in objects(field(payload, "input", list, "", required=True), "input"):
            items.append(store.item(field(item, "id", str, path, required=True), f"{path}.id")
                         if item.get("type") == "item_reference" else item)
    builder = ConversationBuilder()
    instructions = field(payload, "instructions", str, "")
    if instructions:
        builder.add_system(instructions)
    _conversation(builder, items, "input" if previous is None else "the conversation of previous_response_id")
    extra = [options.parallel_calls(payload), _VERBOSITY[one_of(text.get("verbosity", "medium"),
                                                                  tuple(_VERBOSITY), "text.verbosity")]]
    for rule in extra:
        if rule:
            builder.add_system(rule)
    tools = [tool_definition(tool.get("name"), tool.get("description"), tool.get("parameters"), path)
             for path, tool in objects(field(payload, "tools", list, "", default=[]), "tools")
             if tool.get("type") == "function"]  # built-in tools are not offered to Claude
    context = replace(builder.build(tools, tool_choice(payload.get("tool_choice"), flat=True)), settings=generation)
    exchange = Exchange(new_id("resp"), items, keep)
    return Parsed(model, payload["model"], structured.apply(context, output), stream, output=output, store=exchange)


def _conversation(builder: ConversationBuilder, items: list[dict[str, Any]], where: str) -> None:
    """Items in order; consecutive assistant items (text, calls) make one assistant message."""
    pending: list[AssistantContent] = []
    pending_path = ""
    for index, item in enumerate(items):
        path = f"input.{index}" if where == "input" else f"{where} (item {index})"
        kind = one_of(item.get("type", "message"), ("message", "function_call", "function_call_output", "reasoning"),
                      f"{path}.type")
        role = item.get("role") if kind == "message" else None
        if kind == "function_call" or role == "assistant":
            pending_path = pending_path or path
            pending.extend(_call(item, path) if kind == "function_call" else _assistant_parts(item, path))
            continue
        if kind == "reasoning":
            continue  # accepted, not sent: Claude's own thinking is not replayed
        if pending:
            builder.add_assistant(pending, pending_path)
            pending, pending_path = [], ""
        if kind == "function_call_output":
            builder.add_tool_result(item.get("call_id"), _output(item.get("output"), f"{path}.output"), False,
                                    f"{path}.call_id")
            continue
        role = one_of(role, ("user", "system", "developer"), f"{path}.role")
        if role == "user":
            builder.add_user(_user_parts(item.get("content"), f"{path}.content"), path)
        else:
            builder.add_instruction("\n\n".join(_texts(item.get("content"), f"{path}.content")), role)
    if pending:
        builder.add_assistant(pending, pending_path)


def _parts(content: Any, path: str) -> list[tuple[str, dict[str, Any]]]:
    if isinstance(content, str):
        return [(path, {"type": "input_text", "text": content})]
    return objects(content, path)


def _texts(content: Any, path: str) -> list[str]:
    texts = []
    for ppath, part in _parts(content, path):
        one_of(part.get("type"), ("input_text", "output_text"), f"{ppath}.type")
        texts.append(field(part, "text", str, ppath, required=True))
    return texts


def _user_parts(content: Any, path: str) -> list[UserContent]:
    items: list[UserContent] = []
    for ppath, part in _parts(content, path):
        kind = one_of(part.get("type"), ("input_text", "input_image"), f"{ppath}.type")
        if kind == "input_text":
            items.append(TextContent(field(part, "text", str, ppath, required=True)))
            continue
        match = _DATA_URL.fullmatch(field(part, "image_url", str, ppath, required=True))
        if match is None:
            raise invalid(f"{ppath}.image_url", "only base64 data: URLs are accepted (the server fetches nothing)")
        items.append(image(match["data"], match["mime"], f"{ppath}.image_url"))
    return items


def _output(output: Any, path: str) -> list[UserContent]:
    if isinstance(output, str):
        return [TextContent(output)] if output else []
    return _user_parts(output, path)


def _assistant_parts(item: dict[str, Any], path: str) -> list[AssistantContent]:
    parts: list[AssistantContent] = []
    for ppath, part in _parts(item.get("content"), f"{path}.content"):
        kind = one_of(part.get("type"), ("output_text", "refusal", "input_text"), f"{ppath}.type")
        text = field(part, "refusal" if kind == "refusal" else "text", str, ppath, required=True)
        if text:
            parts.append(TextContent(text))
    return parts


def _call(item: dict[str, Any], path: str) -> list[AssistantContent]:
    name = field(item, "name", str, path, required=True)
    arguments = arguments_object(field(item, "arguments", str, path, default="{}"), f"{path}.arguments")
    return [ToolCall(field(item, "call_id", str, path, required=True), name, arguments)]


# --- answers ---------------------------------------------------------------------------


def usage(message: AssistantMessage) -> dict[str, Any]:
    tokens_in, tokens_out, cache_read, _ = usage_numbers(message)
    return {"input_tokens": tokens_in, "input_tokens_details": {"cached_tokens": cache_read},
            "output_tokens": tokens_out, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": tokens_in + tokens_out}


def message_item(item_id: str, text: str, status: str = "completed") -> dict[str, Any]:
    part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    content = [part] if status == "completed" else []
    return {"id": item_id, "type": "message", "role": "assistant", "status": status, "content": content}


def call_item(item_id: str, call: ToolCall, status: str = "completed") -> dict[str, Any]:
    arguments = json.dumps(dict(call.arguments), ensure_ascii=False) if status == "completed" else ""
    return {"id": item_id, "type": "function_call", "status": status, "call_id": call.id, "name": call.name,
            "arguments": arguments}


def reasoning_item(item_id: str, thinking: str) -> dict[str, Any]:
    summary = [{"type": "summary_text", "text": thinking}] if thinking else []
    return {"id": item_id, "type": "reasoning", "summary": summary, "content": [], "status": "completed"}


def output_items(message: AssistantMessage) -> list[dict[str, Any]]:
    """The message's content as output items, consecutive text parts joined into one message."""
    items: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, ThinkingContent):
            items.append(reasoning_item(new_id("rs"), part.thinking))
        elif isinstance(part, TextContent):
            if items and items[-1]["type"] == "message":
                items[-1]["content"][0]["text"] += part.text
            else:
                items.append(message_item(new_id("msg"), part.text))
        else:
            items.append(call_item(new_id("fc"), part))
    return items


def response(parsed: Parsed, status: str, output: list[dict[str, Any]], *, done: AssistantMessage | None = None,
             error: ApiError | None = None) -> dict[str, Any]:
    """The `response` object; `status` is `in_progress`, `completed`, `incomplete` or `failed`."""
    exchange: Exchange = parsed.store
    body: dict[str, Any] = {
        "id": exchange.response_id, "object": "response", "created_at": int(time.time()), "status": status,
        "model": parsed.model_name, "output": output, "error": None, "incomplete_details": None,
        "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "store": exchange.store,
        "usage": usage(done) if done is not None else None,
    }
    if status == "incomplete":
        body["incomplete_details"] = {"reason": "max_output_tokens"}
    if error is not None:
        body["error"] = {"code": "server_error" if error.status >= 500 else "invalid_prompt", "message": error.message}
    return body


def final_status(message: AssistantMessage) -> str:
    return "incomplete" if message.stop_reason == "length" else "completed"
