"""A Chat Completions request in process: what a client is told for each field hostlink cannot
honour, and what a stream says when the provider fails midway."""

from __future__ import annotations

import json

import pytest

from hostlink.host import ErrorEvent, ModelSpec, ProviderSpec, ThinkingDelta, ToolCall
from hostlink.serve import openai
from hostlink.serve.core import PROVIDER, ApiError


async def _stream(model, context, signal):
    yield None


PROVIDER_SPEC = ProviderSpec(PROVIDER, [ModelSpec("sonnet", "Sonnet")], _stream)
HI = {"role": "user", "content": "hi"}


def _parse(**fields):
    return openai.parse({"model": "sonnet", "messages": [HI], **fields}, PROVIDER_SPEC)


def _call(arguments):
    return {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                                                 "function": {"name": "weather", "arguments": arguments}}]}


@pytest.mark.parametrize(("fields", "param", "message"), [
    ({"n": 2}, "n", "only one choice (n = 1) is supported"),
    ({"response_format": "json"}, "response_format", "expected an object"),
    ({"response_format": {"type": "json_schema", "json_schema": "city"}}, "response_format.json_schema",
     "expected an object"),
    ({"tool_choice": ["weather"]}, "tool_choice", "expected a string or an object"),
    ({"messages": [HI, _call("[1, 2]"), {"role": "tool", "tool_call_id": "c1", "content": "x"}]},
     "messages.1.tool_calls.0.function.arguments", "expected a JSON object in a string"),
    ({"messages": [HI, _call("{not json"), {"role": "tool", "tool_call_id": "c1", "content": "x"}]},
     "messages.1.tool_calls.0.function.arguments", "expected a JSON object in a string"),
])
def test_a_field_hostlink_cannot_honour_is_a_bad_request_naming_it(fields, param, message):
    with pytest.raises(ApiError) as refused:
        _parse(**fields)
    assert (refused.value.status, refused.value.param, refused.value.message) == (400, param, f"{param}: {message}")


def test_a_text_format_asks_nothing_and_a_named_tool_choice_offers_that_tool_alone():
    weather = {"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}
    forecast = {"type": "function", "function": {"name": "forecast"}}
    parsed = _parse(response_format={"type": "text"}, tools=[weather, forecast],
                    tool_choice={"type": "function", "function": {"name": "forecast"}})
    assert parsed.output is None
    assert [tool.name for tool in parsed.context.tools] == ["forecast"]
    assert parsed.context.system_prompt.endswith("In this answer you must call the tool forecast.")
    replayed = _parse(messages=[HI, _call(""), {"role": "tool", "tool_call_id": "c1", "content": "sunny"}])
    assert replayed.context.messages[1].content == (ToolCall("c1", "weather", {}),)  # empty arguments: {}


def test_a_stream_that_fails_midway_ends_with_the_error_and_shows_nothing_of_thinking():
    streamer = openai.Streamer(_parse(stream=True))
    assert streamer.feed(ThinkingDelta("hm")) == b""
    chunk = streamer.feed(ErrorEvent("Claude's usage limit was reached", code="rate_limited"))
    assert chunk.startswith(b"data: ") and chunk.endswith(b"\n\n")
    assert json.loads(chunk[len(b"data: "):]) == {"error": {
        "message": "Claude's usage limit was reached", "type": "rate_limit_error", "param": None,
        "code": "rate_limit_exceeded"}}
