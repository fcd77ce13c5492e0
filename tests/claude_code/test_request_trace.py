"""A Claude Code request's `chat` span in process (the SDK's in-memory exporter): what a failed
request's span says, and how the context's messages read under the GenAI content switch. The
spans of whole runs on the real CLI are tests/adapters/test_tracing.py's."""

from __future__ import annotations

import json

from opentelemetry import trace

from hostlink.claude_code.tracing import RequestTrace
from hostlink.host import (
    AssistantMessage,
    Context,
    ErrorEvent,
    GenerationSettings,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from hostlink.host.telemetry import CONTENT_SWITCH
from tracing_support import recording

IMAGE = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


def test_a_failed_request_s_span_has_its_error_code_and_no_answer(monkeypatch):
    monkeypatch.delenv(CONTENT_SWITCH, raising=False)
    exporter = recording()
    request = RequestTrace("sonnet", Context("", (UserMessage((TextContent("hi"),)),),
                                             settings=GenerationSettings(max_output_tokens=64)))
    request.phase("claude start")
    request.finish([ErrorEvent("usage limit reached", code="quota_exceeded")], "fresh")
    phase, chat = exporter.get_finished_spans()
    assert chat.name == "chat sonnet" and phase.parent.span_id == chat.context.span_id
    assert chat.attributes["error.type"] == "quota_exceeded" and chat.status.status_code == trace.StatusCode.ERROR
    assert chat.attributes["hostlink.prewarmed"] is False and chat.attributes["gen_ai.request.max_tokens"] == 64
    assert not [key for key in chat.attributes if key.startswith(("gen_ai.response.", "gen_ai.usage."))]
    assert "usage limit" not in json.dumps(dict(chat.attributes))  # the code, never the message


def test_under_the_content_switch_the_input_messages_keep_their_parts_but_no_image_data(monkeypatch):
    monkeypatch.setenv(CONTENT_SWITCH, "true")
    exporter = recording()
    call = ToolCall("c1", "chart", {"city": "Paris"})
    messages = (UserMessage((TextContent("chart Paris"), ImageContent(IMAGE, "image/png"))),
                AssistantMessage((ThinkingContent("draw it"), TextContent("Drawing."), call), stop_reason="toolUse"),
                ToolResultMessage("c1", "chart", (TextContent("the chart"),)))
    RequestTrace("sonnet", Context("Be brief.", messages)).finish([], "fresh")
    [chat] = exporter.get_finished_spans()
    assert "gen_ai.request.max_tokens" not in chat.attributes  # none asked for
    assert json.loads(chat.attributes["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "chart Paris"},
                                   {"type": "blob", "modality": "image"}]},
        {"role": "assistant", "parts": [{"type": "reasoning", "content": "draw it"},
                                        {"type": "text", "content": "Drawing."},
                                        {"type": "tool_call", "id": "c1", "name": "chart",
                                         "arguments": {"city": "Paris"}}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "the chart"}]}]
    assert chat.attributes["error.type"] == "abandoned"  # ended with neither an answer nor an error
