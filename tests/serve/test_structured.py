"""Structured output in process: what a client is told when its format cannot be used, and what
it receives for each answer Claude may give (the output tool, JSON text, a tool of its own)."""

from __future__ import annotations

import anyio
import pytest

from hostlink.host import (
    AssistantMessage,
    Context,
    Done,
    ErrorEvent,
    TextContent,
    TextDelta,
    ThinkingContent,
    ThinkingDelta,
    ToolCall,
    ToolCallEvent,
    ToolDefinition,
    UserMessage,
)
from hostlink.serve.core import ApiError
from hostlink.serve.structured import TOOL_NAME, OutputFormat, apply, transform

CITY = {"type": "object", "properties": {"name": {"type": "string"}, "population": {"type": "integer"}},
        "required": ["name", "population"]}


def _events(output, *events):
    async def provider():
        for event in events:
            yield event

    async def collect():
        return [event async for event in transform(provider(), output)]

    return anyio.run(collect)


def _done(*content, stop="toolUse"):
    return Done(AssistantMessage(tuple(content), stop_reason=stop))


def test_a_format_that_is_not_a_schema_or_takes_the_tool_name_is_a_bad_request():
    with pytest.raises(ApiError) as not_an_object:
        OutputFormat.of("city", ["type", "object"], "response_format.json_schema")
    assert (not_an_object.value.status, not_an_object.value.message) == (
        400, "response_format.json_schema.schema: expected an object (a JSON Schema)")
    with pytest.raises(ApiError) as invalid_schema:
        OutputFormat.of("city", {"type": "no such type"}, "text.format")
    assert invalid_schema.value.message.startswith("text.format.schema: not a valid JSON Schema (")
    taken = Context("", (UserMessage((TextContent("hi"),)),), tools=(ToolDefinition(TOOL_NAME, "mine", {}),))
    with pytest.raises(ApiError) as reserved:
        apply(taken, OutputFormat.of("city", CITY, "text.format"))
    assert reserved.value.message == "tools: the tool name 'respond_with_json' is reserved for structured output"


def test_the_output_tool_is_offered_and_claude_told_to_answer_through_it():
    context = Context("Be brief.", (UserMessage((TextContent("hi"),)),))
    assert apply(context, None) is context
    offered = apply(context, OutputFormat.of("count", {"type": "integer"}, "text.format"))
    assert offered.system_prompt.startswith("Be brief.\n\nGive your final answer only by calling the tool")
    (tool,) = offered.tools
    assert tool.parameters == {"type": "object", "properties": {"value": {"type": "integer"}}, "required": ["value"]}
    assert "the 'count' schema" in tool.description and offered.settings.answer_tool == TOOL_NAME


def test_the_answer_through_the_tool_or_as_json_text_becomes_the_content_and_only_it():
    city = OutputFormat.of("city", CITY, "text.format")
    through_the_tool = _events(city, TextDelta("Let me answer."), ThinkingDelta("hm"),
                               ToolCallEvent(ToolCall("t1", TOOL_NAME, {"name": "Paris", "population": 2})),
                               _done(ThinkingContent("hm"), TextContent("Let me answer."),
                                     ToolCall("t1", TOOL_NAME, {"name": "Paris", "population": 2})))
    answer = '{"name": "Paris", "population": 2}'
    assert through_the_tool[0] == ThinkingDelta("hm")  # other events pass; the text is held back
    assert through_the_tool[1] == TextDelta(answer)
    assert through_the_tool[2].message.content == (ThinkingContent("hm"), TextContent(answer))
    assert through_the_tool[2].message.stop_reason == "stop"
    fenced = _events(city, _done(TextContent('```json\n{"name": "Lyon", "population": 1}\n```'), stop="stop"))
    assert fenced[0] == TextDelta('{"name": "Lyon", "population": 1}')
    anything = OutputFormat.of("object", None, "response_format")
    assert _events(anything, _done(TextContent('{"ok": true}'), stop="stop"))[0] == TextDelta('{"ok": true}')
    count = OutputFormat.of("count", {"type": "integer"}, "text.format")
    assert _events(count, _done(ToolCall("t1", TOOL_NAME, {"value": 3})))[0] == TextDelta("3")  # unwrapped


def test_a_proposal_of_the_clients_own_tool_passes_through_without_the_held_text():
    city = OutputFormat.of("city", CITY, "text.format")
    weather = ToolCall("t2", "weather", {"city": "Paris"})
    proposal = _done(ThinkingContent("need data"), TextContent("Checking."), weather)
    (done,) = _events(city, TextDelta("Checking."), proposal)
    assert done.message.content == (ThinkingContent("need data"), weather) and done.message.stop_reason == "toolUse"


@pytest.mark.parametrize(("output", "answer", "why"), [
    (("city", CITY), TextContent("Paris, about two million"), "the answer is not JSON"),
    (("object", None), TextContent("[1, 2]"), "the answer is not a JSON object"),
    (("count", {"type": "integer"}), ToolCall("t1", TOOL_NAME, {"number": 3}), "the answer is missing"),
    (("city", CITY), ToolCall("t1", TOOL_NAME, {"name": "Paris", "population": "many"}),
     "at population it breaks the schema's rule population/type"),
])
def test_an_answer_that_does_not_match_is_an_error_never_content(output, answer, why):
    name, schema = output
    events = _events(OutputFormat.of(name, schema, "text.format"), TextDelta("partial"), _done(answer))
    assert events == [ErrorEvent(f"Claude's answer does not match the requested format ({name}): {why}",
                                 code="schema_violation")]


def test_without_a_format_every_event_passes_as_it_is():
    events = (TextDelta("hi"), _done(TextContent("hi"), stop="stop"))
    assert _events(None, *events) == list(events)
