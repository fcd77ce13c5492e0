"""A request as a wire format read it (`Parsed`), and the one chain its answer's events run
through, for every host that answers from provider events: serve's three endpoints and the
LiteLLM host (which reads its requests with serve's Chat reader)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import Any

from hostlink.host import Context, ModelSpec, StreamEvent
from hostlink.serve import stops, structured


@dataclass(frozen=True)
class Parsed:
    """A request read by a wire format: the model, the Context and how to answer."""

    model: ModelSpec
    model_name: str  # as the client named it, echoed in the answer
    context: Context
    stream: bool
    include_usage: bool = False  # OpenAI's stream_options.include_usage
    output: structured.OutputFormat | None = None  # the answer must be JSON (of a schema)
    store: Any = None  # Responses: what to keep of this exchange (responses.Stored), if anything

    def answer(self, events: AsyncIterator[StreamEvent]) -> AsyncGenerator[StreamEvent]:
        """The provider's events as this request is answered: the output tool's proposal turned
        into the answer's text, then the answer cut at its first stop sequence (the context's
        `stop_sequences`: Chat's `stop`, Messages' `stop_sequences`)."""
        return stops.cut(structured.transform(events, self.output), self.context.settings.stop_sequences)
