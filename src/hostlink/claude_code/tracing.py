"""A provider request's trace: one `chat {model}` span with the GenAI convention's attributes,
and a child span per phase a person asks about (the child's start or the prewarmed one taken,
the first token, the proposal, the stop and its verified cleanup).

The phases follow one another, so each `phase()` ends the one before. No span is made
current: the request is a generator, and a current span would leak into its consumer's code
between two events. Content (the context's messages, the answer) is recorded only under the
GenAI convention's switch (`hostlink.host.telemetry.capture_content`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hostlink.claude_code.models import PROVIDER_NAME
from hostlink.host import AssistantMessage, Done, ErrorEvent, StreamEvent, ToolCall, ToolResultMessage, telemetry

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from hostlink.host import Context, Message

# hostlink's stop reasons as the GenAI convention's finish reasons
_FINISH_REASONS = {"stop": "stop", "toolUse": "tool_call", "length": "length"}


def conversation_round(messages: Sequence[Message]) -> int:
    """The round of the conversation this request answers: 1, then one more per answer in it."""
    return 1 + sum(isinstance(message, AssistantMessage) for message in messages)


class RequestTrace:
    """The spans of one provider request for `model` (the id the host asked for)."""

    def __init__(self, model: str, context: Context) -> None:
        self._phase: Span | None = None
        self._phase_name = ""
        self._finished = not telemetry.recording()  # nothing to record: every call returns at once
        if self._finished:
            self.chat = telemetry.idle()
            return
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat", "gen_ai.provider.name": PROVIDER_NAME,
            "gen_ai.request.model": model, "hostlink.conversation.round": conversation_round(context.messages)}
        if context.settings.max_output_tokens is not None:
            attributes["gen_ai.request.max_tokens"] = context.settings.max_output_tokens
        if telemetry.capture_content():
            attributes["gen_ai.system_instructions"] = telemetry.content([{"type": "text",
                                                                           "content": context.system_prompt}])
            attributes["gen_ai.input.messages"] = telemetry.content([_message(m) for m in context.messages])
        self.chat = telemetry.start(f"chat {model}", attributes, kind="client")

    def phase(self, name: str, **attributes: str | bool | int) -> None:
        """End the phase before and start `name` (unless it is `name` already)."""
        if self._finished or name == self._phase_name:
            return
        self._end_phase()
        self._phase = telemetry.start(name, attributes, parent=self.chat)
        self._phase_name = name

    def mark(self, **attributes: str) -> None:
        """Facts learnt during the current phase (how the child was got)."""
        if self._phase is not None:
            self._phase.set_attributes({f"hostlink.claude.{key}": value for key, value in attributes.items()})

    def first_output(self) -> None:
        """The first token or proposal arrived: the wait for it ends, the answer goes on."""
        if self._phase_name == "first token":
            self.phase("answer")

    def finish(self, final: list[StreamEvent], how: str) -> None:
        """End every span with what the request came to (`how` the child was got); once only:
        a consumer that stops reading early ends it with `abandoned`."""
        if self._finished:
            return
        self._finished = True
        self._end_phase()
        chat = self.chat
        chat.set_attribute("hostlink.prewarmed", how == "prewarmed")
        error = next((event.code for event in final if isinstance(event, ErrorEvent)), "abandoned")
        done = next((event for event in final if isinstance(event, Done)), None)
        if done is not None:
            message, usage = done.message, done.message.usage
            chat.set_attributes({
                "gen_ai.response.model": message.model,
                "gen_ai.response.finish_reasons": [_FINISH_REASONS.get(message.stop_reason, message.stop_reason)],
                "gen_ai.usage.input_tokens": usage.input_tokens, "gen_ai.usage.output_tokens": usage.output_tokens,
                "gen_ai.usage.cache_read.input_tokens": usage.cache_read_tokens,
                "gen_ai.usage.cache_creation.input_tokens": usage.cache_write_tokens})
            if telemetry.capture_content():
                chat.set_attribute("gen_ai.output.messages", telemetry.content([_message(message)]))
        telemetry.end(chat, error if done is None else None)

    def _end_phase(self) -> None:
        if self._phase is not None:
            self._phase.end()
            self._phase, self._phase_name = None, ""


def _message(message: Message) -> dict[str, Any]:
    """A message in the GenAI convention's shape (role and parts), for content capture only."""
    parts: list[dict[str, Any]] = []
    if isinstance(message, ToolResultMessage):
        texts = [getattr(part, "text", "") for part in message.content]
        parts.append({"type": "tool_call_response", "id": message.tool_call_id, "response": "".join(texts)})
        return {"role": "tool", "parts": parts}
    for part in message.content:
        if isinstance(part, ToolCall):
            parts.append({"type": "tool_call", "id": part.id, "name": part.name, "arguments": dict(part.arguments)})
        elif hasattr(part, "text"):
            parts.append({"type": "text", "content": part.text})
        elif hasattr(part, "thinking"):
            parts.append({"type": "reasoning", "content": part.thinking})
        else:
            parts.append({"type": "blob", "modality": "image"})
    return {"role": message.role, "parts": parts}
