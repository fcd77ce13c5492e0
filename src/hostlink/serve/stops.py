"""Stop sequences (Chat Completions' `stop`, Messages' `stop_sequences`, LangChain's `stop`),
honoured by hostlink rather than by the model.

Claude Code cannot pass stop sequences to the model, so the answer's text is cut where one
first appears, as the API would have stopped there: the text before it is the answer (the
sequence itself is not part of it), nothing Claude wrote or proposed after it is sent, and
the answer ends as a plain stop that names the sequence. A sequence is looked for within each text block; streamed
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
MAX_LISTED = 16  # Messages' `stop_sequences`, LangChain's `stop`: hostlink's own bound (no API count)
_EXPECTED = "expected a string or a list of strings"


def sequences(value: Any, path: str, *, listed_only: bool = False, limit: int = MAX_SEQUENCES) -> tuple[str, ...]:
    """The stop sequences of a request's `stop` (a string or a list of up to `limit`;
    `listed_only`: a list, as Messages' `stop_sequences` is)."""
    if value is None or (value == "" and not listed_only):
        return ()
    listed = [value] if isinstance(value, str) and not listed_only else value
    if not isinstance(listed, list) or not all(isinstance(item, str) for item in listed):
        raise invalid(path, "expected a list of strings" if listed_only else _EXPECTED)
    if len(listed) > limit:
        raise invalid(path, f"at most {limit} stop sequences")
    if "" in listed:
        raise invalid(path, "a stop sequence must not be empty")
    return tuple(listed)


def _first(text: str, stops: tuple[str, ...]) -> tuple[int, str] | None:
    """Where the answer stops and at which sequence: the one complete first (as the model
    would have been stopped as soon as one was), the longer one on a tie."""
    found = [(index + len(stop), index, stop) for stop in stops if (index := text.find(stop)) >= 0]
    if not found:
        return None
    _, index, stop = min(found)
    return index, stop


def cut_message(message: AssistantMessage, stops: tuple[str, ...]) -> AssistantMessage:
    """The answer up to the first stop sequence in any text block (unchanged without one)."""
    for position, part in enumerate(message.content):
        if isinstance(part, TextContent) and (found := _first(part.text, stops)) is not None:
            index, stop = found
            before = (TextContent(part.text[:index]),) if index else ()
            return replace(message, content=(*message.content[:position], *before), stop_reason="stop",
                           stop_sequence=stop)
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
            found = _first(held, stops)
            if found is not None:
                stopped = True
                if found[0]:
                    yield TextDelta(held[:found[0]])
            elif len(held) > keep:
                yield TextDelta(held[:len(held) - keep])
                held = held[len(held) - keep:]
        else:  # the text block ended (a tool call, thinking, an error): a sequence does not span blocks
            if held and not stopped:
                yield TextDelta(held)
                held = ""
            yield event
