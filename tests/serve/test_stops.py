"""Stop sequences, which hostlink honours by cutting the answer (hostlink.serve.stops): the
events a provider streams, cut as the API would have stopped, and the answer that ends them.
The endpoint and the LiteLLM host with the real `claude` are in test_wire.py and
tests/adapters/test_litellm_frameworks.py (smolagents, which sends them on every step)."""

from __future__ import annotations

import anyio
import pytest

from hostlink.host import AssistantMessage, Done, ErrorEvent, TextContent, TextDelta, ToolCall, ToolCallEvent
from hostlink.serve import stops
from hostlink.serve.core import ApiError


def run(events: list, sequences: tuple[str, ...]) -> list:
    async def source():
        for event in events:
            yield event

    async def collect() -> list:
        return [event async for event in stops.cut(source(), sequences)]

    return anyio.run(collect)


def answer(*content, stop_reason: str = "stop") -> Done:
    return Done(AssistantMessage(content=tuple(content), stop_reason=stop_reason))  # type: ignore[arg-type]


def streamed(text: str, pieces: int = 3) -> list[TextDelta]:
    size = max(1, len(text) // pieces)
    return [TextDelta(text[start:start + size]) for start in range(0, len(text), size)]


def text_of(events: list) -> str:
    return "".join(event.delta for event in events if isinstance(event, TextDelta))


CALL = ToolCall("call-1", "weather", {"city": "Oslo"})


def test_the_answer_ends_before_the_first_sequence_even_across_pieces():
    full = "Thought: look it up.\nObservation: made up\nmore"
    events = run([*streamed(full, 7), ToolCallEvent(CALL), answer(TextContent(full), CALL, stop_reason="toolUse")],
                 ("Observation:",))
    assert text_of(events) == "Thought: look it up.\n"
    assert not [event for event in events if isinstance(event, ToolCallEvent)]  # written after the stop: not sent
    done = events[-1]
    assert done.message.content == (TextContent("Thought: look it up.\n"),) and done.message.stop_reason == "stop"
    assert done.message.stop_sequence == "Observation:"  # Messages' answer names it


def test_without_a_sequence_in_it_the_answer_is_unchanged():
    full = "Obs and Observation without the colon"
    original = [*streamed(full, 5), ToolCallEvent(CALL), answer(TextContent(full), CALL, stop_reason="toolUse")]
    events = run(original, ("Observation:",))
    assert text_of(events) == full
    assert [type(event) for event in events if not isinstance(event, TextDelta)] == [ToolCallEvent, Done]
    assert events[-1] == original[-1] and events[-1].message.stop_sequence is None


def test_the_sequence_complete_first_wins_as_the_model_would_have_stopped():
    events = run([*streamed("xabcd", 5), answer(TextContent("xabcd"))], ("abcd", "bc"))
    assert text_of(events) == "xa" and events[-1].message.content == (TextContent("xa"),)
    assert events[-1].message.stop_sequence == "bc"


def test_a_sequence_at_the_start_leaves_an_empty_answer():
    events = run([TextDelta("STOP here"), answer(TextContent("STOP here"))], ("STOP",))
    assert text_of(events) == "" and events[-1].message.content == ()


def test_a_sequence_is_looked_for_within_each_text_block():
    events = run([TextDelta("Obser"), ToolCallEvent(CALL), TextDelta("vation: no"),
                  answer(TextContent("Obser"), CALL, TextContent("vation: no"), stop_reason="toolUse")],
                 ("Observation:",))
    assert text_of(events) == "Observation: no"  # split by a tool call: no stop
    assert events[-1].message.stop_reason == "toolUse"


def test_an_error_after_the_stop_still_reaches_the_client():
    events = run([TextDelta("a STOP b"), ErrorEvent("the CLI failed")], ("STOP",))
    assert text_of(events) == "a " and events[-1] == ErrorEvent("the CLI failed")


@pytest.mark.parametrize(("value", "expected"), [(None, ()), ("", ()), ("END", ("END",)), (["a", "b"], ("a", "b"))])
def test_the_stop_field_takes_a_string_or_a_list(value, expected):
    assert stops.sequences(value, "stop") == expected


@pytest.mark.parametrize("value", [["a"] * 5, [""], [1], 7, {"a": 1}])
def test_a_stop_field_the_api_would_refuse_is_refused(value):
    with pytest.raises(ApiError) as refused:
        stops.sequences(value, "stop")
    assert refused.value.message.startswith("stop:")


def test_messages_stop_sequences_are_a_list_of_up_to_sixteen():
    assert stops.sequences(["a", "b"], "stop_sequences", listed_only=True, limit=stops.MAX_LISTED) == ("a", "b")
    assert stops.sequences([], "stop_sequences", listed_only=True, limit=stops.MAX_LISTED) == ()
    for value, problem in (("END", "expected a list of strings"), ([""], "a stop sequence must not be empty"),
                           (["s"] * 17, "at most 16 stop sequences")):
        with pytest.raises(ApiError) as refused:
            stops.sequences(value, "stop_sequences", listed_only=True, limit=stops.MAX_LISTED)
        assert refused.value.message == f"stop_sequences: {problem}"
