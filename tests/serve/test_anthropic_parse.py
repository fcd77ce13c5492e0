"""A Messages API request in process: a server-side tool is refused by name, a redacted
thinking block replayed is dropped, tool calls replayed with one id are refused, and a
stream's empty text delta opens no block."""

from __future__ import annotations

import json

import pytest

from hostlink.host import ModelSpec, ProviderSpec, TextContent, TextDelta, ThinkingContent
from hostlink.serve import anthropic
from hostlink.serve.core import PROVIDER, ApiError


async def _stream(model, context, signal):
    yield None


PROVIDER_SPEC = ProviderSpec(PROVIDER, [ModelSpec("sonnet", "Sonnet")], _stream)
HI = {"role": "user", "content": "hi"}


def _parse(**fields):
    return anthropic.parse({"model": "sonnet", "max_tokens": 100, "messages": [HI], **fields}, PROVIDER_SPEC)


def test_a_tool_the_api_would_run_itself_is_a_bad_request_naming_it():
    with pytest.raises(ApiError) as refused:
        _parse(tools=[{"type": "web_search_20250305", "name": "web_search"}])
    assert (refused.value.status, refused.value.param) == (400, "tools.0.type")
    assert refused.value.message == ("tools.0.type: only custom tools (name, description, input_schema) "
                                     "are supported")


def test_a_redacted_thinking_block_replayed_is_dropped_and_the_rest_kept():
    replayed = {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "hm", "signature": "s"},
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "text", "text": "hello"}]}
    parsed = _parse(messages=[HI, replayed, {"role": "user", "content": "and?"}])
    assert parsed.context.messages[1].content == (ThinkingContent("hm"), TextContent("hello"))


def test_two_replayed_tool_calls_sharing_an_id_are_a_bad_request():
    call = {"type": "tool_use", "id": "c1", "name": "weather", "input": {}}
    replayed = {"role": "assistant", "content": [call, {**call, "input": {"city": "Paris"}}]}
    with pytest.raises(ApiError) as refused:
        _parse(messages=[HI, replayed])
    assert (refused.value.status, refused.value.message) == (400, "messages.1: two tool calls share one id")


def test_an_empty_text_delta_in_a_stream_opens_no_block():
    streamer = anthropic.Streamer(_parse(stream=True))
    assert streamer.feed(TextDelta("")) == b""
    event, data = streamer.feed(TextDelta("hi")).split(b"\n")[:2]
    assert event == b"event: content_block_start" and json.loads(data[len(b"data: "):])["index"] == 0
