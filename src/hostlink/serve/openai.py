"""The OpenAI Chat Completions wire format (`POST /v1/chat/completions`) on the shared core.

Request fields read: `model`, `messages` (`system`/`developer`/`user`/`assistant`
with `tool_calls`/`tool`; text parts and `image_url` data URLs — other URLs are refused,
the server fetches nothing), `tools` of type `function`, `tool_choice`, `stream` and
`stream_options.include_usage`, `n` (1 only), `max_completion_tokens`/`max_tokens`,
`reasoning_effort`, `response_format`, `parallel_tool_calls`; sampling fields go
through `hostlink.serve.options`. Thinking is not part of this format and is left out
of answers.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import replace
from typing import Any

from hostlink.host import (
    AssistantContent,
    AssistantMessage,
    Done,
    ErrorEvent,
    ProviderSpec,
    StreamEvent,
    TextContent,
    TextDelta,
    ToolCall,
    ToolCallEvent,
    UserContent,
)
from hostlink.serve import options, stops, structured
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

# neutral kind -> (type, code)
ERROR_TYPES = {"invalid_request": ("invalid_request_error", None),
               "authentication": ("authentication_error", "invalid_api_key"),
               "permission": ("permission_error", None), "not_found": ("invalid_request_error", "not_found"),
               "model_not_found": ("invalid_request_error", "model_not_found"),
               "too_large": ("invalid_request_error", "request_too_large"),
               "rate_limit": ("rate_limit_error", "rate_limit_exceeded"), "api": ("server_error", None),
               "overloaded": ("server_error", "overloaded")}
_FINISH_REASONS = {"stop": "stop", "length": "length", "toolUse": "tool_calls"}
_DATA_URL = re.compile(r"data:(?P<mime>[\w.+-]+/[\w.+-]+);base64,(?P<data>.*)", re.DOTALL)
_ARGUMENT_PIECE = 256




def error_body(error: ApiError) -> dict[str, Any]:
    kind, code = ERROR_TYPES.get(error.kind, ("server_error", None))
    return {"error": {"message": error.message, "type": kind, "param": error.param, "code": code}}


def parse(payload: dict[str, Any], provider: ProviderSpec) -> Parsed:
    model = resolve_model(provider, field(payload, "model", str, "", required=True))
    stream = field(payload, "stream", bool, "", default=False)
    stream_options = field(payload, "stream_options", dict, "", default={})
    include_usage = field(stream_options, "include_usage", bool, "stream_options", default=False)
    if field(payload, "n", int, "", default=1) != 1:
        raise invalid("n", "only one choice (n = 1) is supported")
    options.refuse_non_defaults(payload, "chat")
    limit = payload.get("max_completion_tokens")
    name = "max_completion_tokens" if limit is not None else "max_tokens"
    generation = options.settings(options.max_output(payload.get(name), name, model),
                                  options.openai_effort(payload.get("reasoning_effort"), "reasoning_effort"))
    output = response_format(payload.get("response_format"), "response_format")
    stop = stops.sequences(payload.get("stop"), "stop")
    if stop and output is not None:
        raise invalid("stop", "stop sequences cannot cut an answer that must be JSON; leave one of them out")
    builder = ConversationBuilder()
    for path, message in objects(field(payload, "messages", list, "", required=True), "messages"):
        role = one_of(message.get("role"), ("system", "developer", "user", "assistant", "tool"), f"{path}.role")
        if role in ("system", "developer"):
            builder.add_instruction("\n\n".join(_texts(message.get("content"), f"{path}.content")), role)
        elif role == "user":
            builder.add_user(_user_content(message.get("content"), f"{path}.content"), path)
        elif role == "assistant":
            builder.add_assistant(_assistant(message, path), path)
        else:
            content = [TextContent(text) for text in _texts(message.get("content"), f"{path}.content")]
            builder.add_tool_result(message.get("tool_call_id"), content, False, f"{path}.tool_call_id")
    tools = []
    for tpath, tool in objects(field(payload, "tools", list, "", default=[]), "tools"):
        one_of(tool.get("type"), ("function",), f"{tpath}.type")
        function = field(tool, "function", dict, tpath, required=True)
        fpath = f"{tpath}.function"
        tools.append(tool_definition(function.get("name"), function.get("description"), function.get("parameters"),
                                     fpath))
    parallel = options.parallel_calls(payload)
    if parallel:
        builder.add_system(parallel)
    context = replace(builder.build(tools, tool_choice(payload.get("tool_choice"))),
                      settings=replace(generation, stop_sequences=stop))
    return Parsed(model, payload["model"], structured.apply(context, output), stream, include_usage, output=output)


def response_format(value: Any, path: str) -> structured.OutputFormat | None:
    """Chat's `response_format` (`text`, `json_object`, `json_schema`); the same
    object is Responses' `text.format` without the `json_schema` wrapper."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise invalid(path, "expected an object")
    kind = one_of(value.get("type"), ("text", "json_object", "json_schema"), f"{path}.type")
    if kind == "text":
        return None
    if kind == "json_object":
        return structured.OutputFormat.of("json_object", None, path)
    spec = value.get("json_schema", value)  # Chat wraps it; Responses does not
    where = f"{path}.json_schema" if "json_schema" in value else path
    if not isinstance(spec, dict):
        raise invalid(where, "expected an object")
    name = field(spec, "name", str, where, default="json_schema")
    field(spec, "strict", bool, where)  # an answer is always validated, strict or not
    return structured.OutputFormat.of(name, field(spec, "schema", dict, where, required=True), where)


def tool_choice(value: Any, flat: bool = False) -> ToolChoice:
    """OpenAI's `tool_choice`; `flat`: Responses names the function beside `type`."""
    if value is None or isinstance(value, str):
        mode = one_of(value or "auto", ("auto", "none", "required"), "tool_choice")
        return ToolChoice("any" if mode == "required" else mode)
    if not isinstance(value, dict):
        raise invalid("tool_choice", "expected a string or an object")
    one_of(value.get("type"), ("function",), "tool_choice.type")
    if flat:
        return ToolChoice("tool", field(value, "name", str, "tool_choice", required=True))
    function = field(value, "function", dict, "tool_choice", required=True)
    return ToolChoice("tool", field(function, "name", str, "tool_choice.function", required=True))


def arguments_object(text: str, path: str) -> dict[str, Any]:
    """A tool call's `arguments` string: a JSON object (empty: `{}`)."""
    try:
        value = json.loads(text or "{}")
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise invalid(path, "expected a JSON object in a string")
    return value


def _parts(content: Any, path: str) -> list[tuple[str, dict[str, Any]]]:
    if isinstance(content, str):
        return [(path, {"type": "text", "text": content})]
    if content is None:
        return []
    return objects(content, path)


def _texts(content: Any, path: str) -> list[str]:
    texts = []
    for ppath, part in _parts(content, path):
        one_of(part.get("type"), ("text",), f"{ppath}.type")
        texts.append(field(part, "text", str, ppath, required=True))
    return texts


def _user_content(content: Any, path: str) -> list[UserContent]:
    items: list[UserContent] = []
    for ppath, part in _parts(content, path):
        kind = one_of(part.get("type"), ("text", "image_url"), f"{ppath}.type")
        if kind == "text":
            items.append(TextContent(field(part, "text", str, ppath, required=True)))
            continue
        url = field(field(part, "image_url", dict, ppath, required=True), "url", str, f"{ppath}.image_url",
                    required=True)
        match = _DATA_URL.fullmatch(url)
        if match is None:
            raise invalid(f"{ppath}.image_url.url",
                          "only base64 data: URLs are accepted (the server fetches nothing)")
        items.append(image(match["data"], match["mime"], f"{ppath}.image_url.url"))
    return items


def _assistant(message: dict[str, Any], path: str) -> list[AssistantContent]:
    content: list[AssistantContent] = []
    for ppath, part in _parts(message.get("content"), f"{path}.content"):
        kind = one_of(part.get("type"), ("text", "refusal"), f"{ppath}.type")
        text = field(part, kind, str, ppath, required=True)
        if text:
            content.append(TextContent(text))
    for cpath, call in objects(field(message, "tool_calls", list, path, default=[]), f"{path}.tool_calls"):
        one_of(call.get("type", "function"), ("function",), f"{cpath}.type")
        function = field(call, "function", dict, cpath, required=True)
        name = field(function, "name", str, f"{cpath}.function", required=True)
        arguments = field(function, "arguments", str, f"{cpath}.function", default="{}")
        value = arguments_object(arguments, f"{cpath}.function.arguments")
        content.append(ToolCall(field(call, "id", str, cpath, required=True), name, value))
    return content


# --- answers ---------------------------------------------------------------------------


def _usage(message: AssistantMessage) -> dict[str, Any]:
    tokens_in, tokens_out, cache_read, _ = usage_numbers(message)
    return {"prompt_tokens": tokens_in, "completion_tokens": tokens_out, "total_tokens": tokens_in + tokens_out,
            "prompt_tokens_details": {"cached_tokens": cache_read}}


def _call(call: ToolCall) -> dict[str, Any]:
    return {"id": call.id, "type": "function",
            "function": {"name": call.name, "arguments": json.dumps(dict(call.arguments), ensure_ascii=False)}}


def _completion_id() -> str:
    return "chatcmpl-" + uuid.uuid4().hex[:24]


def message(parsed: Parsed, done: AssistantMessage) -> dict[str, Any]:
    text = "".join(part.text for part in done.content if isinstance(part, TextContent))
    calls = [_call(part) for part in done.content if isinstance(part, ToolCall)]
    reply: dict[str, Any] = {"role": "assistant", "content": text or None, "refusal": None}
    if calls:
        reply["tool_calls"] = calls
    return {"id": _completion_id(), "object": "chat.completion", "created": int(time.time()),
            "model": parsed.model_name,
            "choices": [{"index": 0, "message": reply, "finish_reason": _FINISH_REASONS[done.stop_reason],
                         "logprobs": None}],
            "usage": _usage(done)}


class Streamer:
    """Provider events -> `data:` lines of `chat.completion.chunk`, then `[DONE]`."""

    def __init__(self, parsed: Parsed) -> None:
        self._parsed = parsed
        self._id = _completion_id()
        self._created = int(time.time())
        self._calls = 0

    def _chunk(self, delta: dict[str, Any] | None, finish: str | None = None, usage: Any = None) -> bytes:
        chunk: dict[str, Any] = {"id": self._id, "object": "chat.completion.chunk", "created": self._created,
                                 "model": self._parsed.model_name, "choices": []}
        if delta is not None:
            chunk["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]
        if self._parsed.include_usage:
            chunk["usage"] = usage
        return b"data: " + json.dumps(chunk, ensure_ascii=False).encode() + b"\n\n"

    def opening(self) -> bytes:
        return self._chunk({"role": "assistant", "content": ""})

    def feed(self, event: StreamEvent) -> bytes:
        if isinstance(event, TextDelta) and event.delta:
            return self._chunk({"content": event.delta})
        if isinstance(event, ToolCallEvent):
            call = _call(event.tool_call)
            arguments = call["function"]["arguments"]
            index, self._calls = self._calls, self._calls + 1
            head = {"index": index, "id": call["id"], "type": "function",
                    "function": {"name": call["function"]["name"], "arguments": ""}}
            out = self._chunk({"tool_calls": [head]})
            for start in range(0, len(arguments), _ARGUMENT_PIECE):
                piece = arguments[start:start + _ARGUMENT_PIECE]
                out += self._chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            return out
        if isinstance(event, Done):
            out = self._chunk({}, _FINISH_REASONS[event.message.stop_reason])
            if self._parsed.include_usage:
                out += self._chunk(None, usage=_usage(event.message))
            return out + b"data: [DONE]\n\n"
        if isinstance(event, ErrorEvent):
            return self.failed(provider_error(event))
        return b""

    def failed(self, error: ApiError) -> bytes:
        return b"data: " + json.dumps(error_body(error)).encode() + b"\n\n"
