"""Messages' `stop_sequences` through `hostlink serve`, with the official `anthropic` SDK as
the client, whole and streamed: the answer ends where a sequence is first complete (even one
that arrives split over stream events), with `stop_reason: "stop_sequence"` and the sequence
named, and nothing Claude wrote or proposed after it is sent. The real `claude` CLI runs
upstream against the fake Anthropic API."""

from __future__ import annotations

import anthropic
import pytest

from peers import requires_claude
from serve_support import KEY, TOOL_PREFIX, WEATHER_SCHEMA, fa

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("fresh_script"), requires_claude]

SAID = "Thought: look it up.\nObservation: invented\nmore"
WEATHER_TOOL = {"name": "get_weather", "description": "The weather in a city", "input_schema": WEATHER_SCHEMA}
ASK = [{"role": "user", "content": "The weather in Oslo?"}]


@pytest.fixture
def claude(server):
    with anthropic.Anthropic(base_url=server.base_url, api_key=KEY, max_retries=0) as client:
        yield client


def said_then_proposed() -> fa.Reply:
    """Text with the sequence split over three deltas, then a proposal the cut must drop."""
    return fa.Reply((fa.Text(SAID), fa.ToolUse(TOOL_PREFIX + "get_weather", {"city": "Oslo"})), chunk=4,
                    stop_reason="tool_use")


def test_a_whole_answer_stops_at_the_sequence_and_names_it(claude, api):
    api.push(said_then_proposed())
    message = claude.messages.create(model="sonnet", max_tokens=256, tools=[WEATHER_TOOL], messages=ASK,
                                     stop_sequences=["never", "Observation:"])
    assert [block.type for block in message.content] == ["text"]
    assert message.content[0].text == "Thought: look it up.\n"
    assert (message.stop_reason, message.stop_sequence) == ("stop_sequence", "Observation:")


def test_a_streamed_answer_stops_at_a_sequence_split_over_events(claude, api):
    api.push(said_then_proposed())
    with claude.messages.stream(model="sonnet", max_tokens=256, tools=[WEATHER_TOOL], messages=ASK,
                                stop_sequences=["Observation:"]) as stream:
        events = list(stream)
        final = stream.get_final_message()
    texts = [event.delta.text for event in events if event.type == "content_block_delta"]
    assert "".join(texts) == "Thought: look it up.\n" and len(texts) > 1
    assert not [event for event in events if event.type == "content_block_start"
                and event.content_block.type == "tool_use"]
    (delta,) = [event for event in events if event.type == "message_delta"]
    assert (delta.delta.stop_reason, delta.delta.stop_sequence) == ("stop_sequence", "Observation:")
    assert [block.type for block in final.content] == ["text"]
    assert (final.stop_reason, final.stop_sequence) == ("stop_sequence", "Observation:")


def test_an_answer_without_the_sequence_ends_as_it_would_have(claude, api):
    api.push(fa.text("No marker here."))
    message = claude.messages.create(model="sonnet", max_tokens=64, messages=ASK, stop_sequences=["Observation:"])
    assert message.content[0].text == "No marker here."
    assert (message.stop_reason, message.stop_sequence) == ("end_turn", None)


@pytest.mark.parametrize(("extra", "problem"), [
    ({"stop_sequences": [f"s{index}" for index in range(17)]}, "stop_sequences: at most 16 stop sequences"),
    ({"stop_sequences": [""]}, "stop_sequences: a stop sequence must not be empty"),
    ({"stop_sequences": "END"}, "stop_sequences: expected a list of strings"),
    ({"stop_sequences": ["END"], "output_config": {"format": {"type": "json_schema", "schema": WEATHER_SCHEMA}}},
     "stop_sequences: stop sequences cannot cut an answer that must be JSON"),
])
def test_stop_sequences_the_endpoint_cannot_honour_are_refused_by_name(claude, extra, problem):
    with pytest.raises(anthropic.BadRequestError) as refused:
        claude.messages.create(model="sonnet", max_tokens=64, messages=ASK, extra_body=extra)
    assert refused.value.body["error"]["type"] == "invalid_request_error"
    assert refused.value.body["error"]["message"].startswith(problem)
