"""A Responses request in process: the conversation Claude gets from the items a client replays
or from a stored response it continues, and the output items an answer is stored as."""

from __future__ import annotations

from hostlink.host import (
    AssistantMessage,
    ModelSpec,
    ProviderSpec,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from hostlink.serve import responses
from hostlink.serve.core import PROVIDER
from hostlink.serve.response_store import ResponseStore


async def _stream(model, context, signal):
    yield None


PROVIDER_SPEC = ProviderSpec(PROVIDER, [ModelSpec("sonnet", "Sonnet")], _stream)
CALL = ToolCall("call_1", "weather", {"city": "Paris"})


def test_replayed_items_become_one_assistant_turn_per_run_of_text_and_calls():
    parsed = responses.parse({"model": "sonnet", "instructions": "Be brief.", "text": {"verbosity": "low"},
                              "parallel_tool_calls": False, "input": [
        {"role": "user", "content": "weather in Paris?"},
        {"type": "reasoning", "id": "rs_1", "summary": []},  # accepted, not replayed to Claude
        {"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "Let me look."}, {"type": "output_text", "text": ""},
            {"type": "refusal", "refusal": "No forecasts."}]},
        {"type": "function_call", "call_id": "call_1", "name": "weather", "arguments": '{"city": "Paris"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
    ]}, PROVIDER_SPEC, ResponseStore())
    context = parsed.context
    assert context.system_prompt.startswith("Be brief.\n\n")
    assert context.system_prompt.endswith("Answer as briefly as the question allows.")
    assert list(context.messages) == [
        UserMessage((TextContent("weather in Paris?"),)),
        AssistantMessage((TextContent("Let me look."), TextContent("No forecasts."), CALL)),  # the empty text left out
        ToolResultMessage("call_1", "weather", (TextContent("sunny"),)),
    ]


def test_a_stored_answer_is_its_output_items_and_continuing_it_gives_claude_the_same_turn():
    answer = AssistantMessage((ThinkingContent("look it up"), TextContent("Let me "), TextContent("look."), CALL))
    output = responses.output_items(answer)
    assert [item["type"] for item in output] == ["reasoning", "message", "function_call"]
    assert output[1]["content"][0]["text"] == "Let me look."  # consecutive text, one message
    store = ResponseStore()
    store.add("resp_1", [{"type": "message", "role": "user", "content": "weather in Paris?"}], output)
    parsed = responses.parse({"model": "sonnet", "previous_response_id": "resp_1", "input": [
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny"}]}, PROVIDER_SPEC, store)
    assert list(parsed.context.messages) == [
        UserMessage((TextContent("weather in Paris?"),)),
        AssistantMessage((TextContent("Let me look."), CALL)),  # Claude's thinking is not replayed
        ToolResultMessage("call_1", "weather", (TextContent("sunny"),)),
    ]


def test_an_empty_text_delta_in_a_stream_opens_no_output_item():
    from hostlink.host import TextDelta
    from hostlink.serve.responses_stream import ResponsesWire, Streamer

    store = ResponseStore()
    parsed = responses.parse({"model": "sonnet", "input": "hi", "stream": True}, PROVIDER_SPEC, store)
    streamer = Streamer(parsed, ResponsesWire(store))
    assert streamer.feed(TextDelta("")) == b""
    said = streamer.feed(TextDelta("hello")).decode()
    assert said.startswith("event: response.output_item.added\n") and '"output_index": 0' in said
