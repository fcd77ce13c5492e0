"""`ClaudeCodeLLM`: the Claude Code provider as a LiteLLM custom provider.

LiteLLM hands a custom provider the OpenAI Chat request it was given (messages, and the
tools, `tool_choice`, `response_format`, `max_tokens` … as optional parameters). That is
the request `hostlink serve` reads on `/v1/chat/completions`, so this host reads it with
serve's own reader: the same fields honoured (tools as proposals, structured output through
an answer tool, checked against the schema), the same refused with a message naming the
field. The rounds of one conversation share a host session, so the next round's `claude` is
prewarmed while the framework runs the tools (`claude_request.Conversations`); leaving a
stream early or cancelling the task stops its `claude`. Failures are LiteLLM's exceptions with the provider's message.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from litellm import exceptions
from litellm.llms.custom_llm import CustomLLM
from litellm.types.utils import ModelResponse

from hostlink.adapters.claude_request import ClaudeSettings, Conversations
from hostlink.claude_code import PROVIDER_NAME
from hostlink.host import Done, ErrorEvent, StreamEvent, TextDelta, ToolCallEvent

if TYPE_CHECKING:
    from hostlink.serve.core import ApiError
    from hostlink.serve.parsed import Parsed

_FINISH_REASONS = {"stop": "stop", "length": "length", "toolUse": "tool_calls"}
# LiteLLM's own bookkeeping among the optional parameters: not part of the request
_LITELLM_ONLY = ("stream", "stream_options", "extra_body", "user", "metadata")


class ClaudeCodeLLM(CustomLLM):
    """The handler `register` puts in `litellm.custom_provider_map`. Its methods take
    LiteLLM's arguments by name and read only `optional_params` of the many it passes
    (hence the `override` ignores: the signatures are LiteLLM's, written shorter)."""

    def __init__(self, settings: ClaudeSettings) -> None:
        super().__init__()
        self.conversations = Conversations(settings)

    def close(self) -> None:
        """End the conversations left waiting for a next round, and their prewarmed `claude`."""
        self.conversations.close()

    def completion(self, model: str, messages: list[Any], *args: Any, optional_params: dict[str, Any],  # type: ignore[override]
                   **kwargs: Any) -> Any:
        return self.conversations.run_sync(lambda: self.acompletion(model, messages, optional_params=optional_params))

    def streaming(self, model: str, messages: list[Any], *args: Any, optional_params: dict[str, Any],  # type: ignore[override]
                  **kwargs: Any) -> Iterator[dict[str, Any]]:
        return self.conversations.iterate_sync(
            lambda: self.astreaming(model, messages, optional_params=optional_params))

    async def acompletion(self, model: str, messages: list[Any], *args: Any, optional_params: dict[str, Any],  # type: ignore[override]
                          **kwargs: Any) -> Any:
        from hostlink.serve.openai import message

        async with self._events(model, messages, optional_params) as (parsed, events):
            async for event in events:
                if isinstance(event, Done):
                    return ModelResponse(**message(parsed, event.message))
        raise exceptions.InternalServerError(message="the Claude Code stream ended without an answer", model=model,
                                             llm_provider=PROVIDER_NAME)

    async def astreaming(self, model: str, messages: list[Any], *args: Any, optional_params: dict[str, Any],  # type: ignore[override]
                         **kwargs: Any) -> AsyncIterator[dict[str, Any]]:
        calls = 0
        async with self._events(model, messages, optional_params) as (_, events):
            async for event in events:
                if isinstance(event, TextDelta) and event.delta:
                    yield _chunk(event.delta)
                elif isinstance(event, ToolCallEvent):
                    call = event.tool_call
                    yield _chunk("", tool_use={"id": call.id, "type": "function", "index": calls, "function": {
                        "name": call.name, "arguments": json.dumps(dict(call.arguments), ensure_ascii=False)}})
                    calls += 1
                elif isinstance(event, Done):
                    usage = event.message.usage
                    prompt = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
                    yield _chunk("", finished=_FINISH_REASONS[event.message.stop_reason], usage={
                        "prompt_tokens": prompt, "completion_tokens": usage.output_tokens,
                        "total_tokens": prompt + usage.output_tokens})

    @asynccontextmanager
    async def _events(self, model: str, messages: list[Any],
                      optional_params: dict[str, Any]) -> AsyncGenerator[tuple[Parsed, AsyncIterator[StreamEvent]]]:
        """The request read as serve reads it, and the provider's events with structured
        output applied; a refused request or a failure raises LiteLLM's exception. Leaving
        the block after the answer lets the conversation's next round find its `claude`
        prewarmed; leaving it early (an error, a cancelled task) stops that `claude`."""
        from hostlink.serve import openai
        from hostlink.serve.core import ApiError

        payload = {key: value for key, value in optional_params.items() if key not in _LITELLM_ONLY}
        payload.update(model=model, messages=messages)
        try:
            parsed = openai.parse(payload, self.conversations.provider)
        except ApiError as error:
            raise litellm_error(error, model) from None
        async with self.conversations.events(parsed.model, parsed.context, []) as events:
            yield parsed, _raising(parsed.answer(events), model)


async def _raising(events: AsyncIterator[StreamEvent], model: str) -> AsyncIterator[StreamEvent]:
    """The events, a provider failure raised as LiteLLM's exception."""
    from hostlink.serve.core import provider_error

    async for event in events:
        if isinstance(event, ErrorEvent):
            raise litellm_error(provider_error(event), model, code=event.code)
        yield event


def _chunk(text: str, *, tool_use: dict[str, Any] | None = None, finished: str | None = None,
           usage: dict[str, int] | None = None) -> dict[str, Any]:
    """A LiteLLM `GenericStreamingChunk`."""
    return {"text": text, "tool_use": tool_use, "is_finished": finished is not None, "finish_reason": finished or "",
            "usage": usage, "index": 0}


def litellm_error(error: ApiError, model: str, *, code: str | None = None) -> Exception:
    """LiteLLM's exception for an API error of serve's (the same status, the same message)."""
    named: dict[str, Any] = {"message": error.message, "model": model, "llm_provider": PROVIDER_NAME}
    if code == "context_length_exceeded":
        return exceptions.ContextWindowExceededError(**named)
    if error.status == 403:  # the plan refused: LiteLLM's class wants the HTTP answer it came in
        import httpx

        answer = httpx.Response(403, request=httpx.Request("POST", "http://127.0.0.1/claude-code"))
        return exceptions.PermissionDeniedError(**named, response=answer)
    by_status: dict[int, Any] = {
        400: exceptions.BadRequestError, 401: exceptions.AuthenticationError, 404: exceptions.NotFoundError,
        413: exceptions.BadRequestError, 429: exceptions.RateLimitError, 503: exceptions.ServiceUnavailableError,
        504: exceptions.Timeout, 529: exceptions.ServiceUnavailableError,
    }
    raised: Exception = by_status.get(error.status, exceptions.InternalServerError)(**named)
    return raised
