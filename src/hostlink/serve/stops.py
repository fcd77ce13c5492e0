"""Stop sequences (Chat Completions' `stop`), honoured by hostlink rather than by the model.

Claude Code cannot pass stop sequences to the model, so the answer's text is cut where one
first appears, as the API would have stopped there: the text before it is the answer (the
sequence itself is not part of it), nothing Claude wrote or proposed after it is sent, and
the answer ends as a plain stop. A sequence is looked for within each text block; streamed
text is held back only as long as it could still be the start of one. Agent frameworks send
them (smolagents' `Observation:`), so refusing them would shut those frameworks out.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import replace
from typing import Any

from hostlink.host import AssistantMessage, Done, StreamEvent, TextContent, TextDelta, ThinkingDelta, ToolCallEvent
from hostlink.serve.core import invalid

MAX_SEQUENCES = 4  # as OpenAI's API takes


def sequences(value: Any, path: str) -> tuple[str, ...]:
    """The stop sequences of a request's `stop` (a string or a list of up to four)."""
    if value is None or value == "":
        return ()
    listed = [value] if isinstance(value, str) else value
    if not isinstance(listed, list) or not all(isinstance(item, str) for item in listed):
        raise invalid(path, "expected a string or a list of strings")
    if len(listed) > MAX_SEQUENCES:
        raise invalid(path, f"at most {MAX_SEQUENCES} stop sequences")
    if "" in listed:
        raise invalid(path, "a stop sequence must not be empty")
    return tuple(listed)


def _first(text: str, stops: tuple[str, ...]) -> int | None:
    """Where the answer stops: the start of the sequence that is complete first (as the
    model would have been stopped as soon as one was), the longer one on a tie."""
    found = [(index + len(stop), index) for stop in stops if (index := text.find(stop)) >= 0]
    return min(found)[1] if found else None


def cut_message(message: AssistantMessage, stops: tuple[str, ...]) -> AssistantMessage:
    """The answer up to the first stop sequence in any text block (unchanged without one)."""
    for position, part in enumerate(message.content):
        if isinstance(part, TextContent) and (index := _first(part.text, stops)) is not None:
            before = (TextContent(part.text[:index]),) if index else ()
            return replace(message, content=(*message.content[:position], *before), stop_reason="stop")
    return message


async def cut(events: AsyncIterator[StreamEvent], stops: tuple[str, ...]) -> AsyncGenerator[StreamEvent]:
    """Provider events with the answer cut at the first stop sequence. The events are read to
    their end (the provider's own cleanup and usage come with its `Done`)."""
    if not stops:
        async for event in events:
            yield event
        return
    keep = max(map(len, stops)) - 1  # a tail this long may be the start of a sequence
    held = ""
    stopped = False
    async for event in events:
        if isinstance(event, Done):
            if held and not stopped:
                yield TextDelta(held)
            yield replace(event, message=cut_message(event.message, stops))
        elif stopped and isinstance(event, (TextDelta, ThinkingDelta, ToolCallEvent)):
            continue  # what the model would not have written
        elif isinstance(event, TextDelta):
            held += event.delta
            index = _first(held, stops)
            if index is not None:
                stopped = True
                if index:
                    yield TextDelta(held[:index])
            elif len(held) > keep:
                yield TextDelta(held[:len(held) - keep])
                held = held[len(held) - keep:]
        else:  # the text block ended (a tool call, thinking, an error): a sequence does not span blocks
            if held and not stopped:
                yield TextDelta(held)
                held = ""
            yield event
