"""`ClaudeCodeModel`: the Claude Code provider as a pydantic-ai `Model`.

The rounds of one agent run share a host session (`ConversationSessions`): a request whose
history extends a previous round's that ended with tool calls continues on that round's
session, so the `claude` its provider prewarmed while pydantic-ai ran the tools answers it.
Concurrent runs share no state, and a run that ends (an answer, an error, a cancelled task)
leaves nothing running; a round that is never followed up is shut down within the prewarm idle
bound, or at once when the model is garbage-collected. Claude only proposes tool calls:
pydantic-ai executes every one, function and output tools alike. A cancelled agent task cancels the request,
which stops its `claude`; provider failures are pydantic-ai model errors carrying the
provider's message and code, never reply text.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic_ai import exceptions
from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import FinishReason, ModelMessage, ModelResponse, ModelResponseStreamEvent
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import RequestUsage

from hostlink.adapters.notices import LogNotifier
from hostlink.adapters.pydantic_ai.history import context_of, response_parts
from hostlink.claude_code import (
    EXTRA_USAGE_MODES,
    MODELS,
    PROVIDER_NAME,
    ClaudeCodeExtension,
    ConversationSessions,
)
from hostlink.host import (
    AssistantMessage,
    CancelSignal,
    Context,
    Done,
    ErrorEvent,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
)
from hostlink.host.session import HostSession

if TYPE_CHECKING:
    from pydantic_ai import RunContext

    from hostlink.claude_code import ClaudeTransportOptions

class ClaudePlanRefusedError(exceptions.ModelRequestRejectedError):
    """The Claude plan refused the request (third-party apps on extra usage, extra usage off, an
    organization's spend cap): its settings must change, so retrying cannot help."""


_FINISH: dict[str, FinishReason] = {
    "stop": "stop", "length": "length", "toolUse": "tool_call", "error": "error", "aborted": "error"}
_ERRORS: Mapping[str, type[exceptions.ModelAPIError]] = {
    "not_signed_in": exceptions.ModelAuthenticationError,
    "auth_failed": exceptions.ModelAuthenticationError,
    "rate_limited": exceptions.ModelRateLimitError,
    "quota_exceeded": exceptions.ModelQuotaExceededError,
    "provider_unavailable": exceptions.ModelServerError,
    "context_length_exceeded": exceptions.ModelContextWindowExceededError,
    "invalid_request": exceptions.ModelRequestRejectedError,
    "plan_refused": ClaudePlanRefusedError,
}



class ClaudeCodeModel(Model):
    """The user's signed-in `claude` CLI as a model: `ClaudeCodeModel("sonnet")`.

    `cwd` is the directory `claude` runs in (default: the current one when a request
    starts). `extra_usage` (`allow` | `warn` | `refuse`; default
    `HOSTLINK_CLAUDE_EXTRA_USAGE`, else `warn`): once the plan's window is used up and
    requests would draw on extra usage, `refuse` fails them with `ModelQuotaExceededError`
    before any `claude` starts, until the window resets. `options` and `environ` are for
    tests (a local fake API, a PATH that finds a particular `claude`).
    """

    def __init__(self, model_name: str = "sonnet", *, cwd: Path | str | None = None,
                 settings: ModelSettings | None = None, extra_usage: str | None = None,
                 options: ClaudeTransportOptions | None = None, environ: Mapping[str, str] | None = None) -> None:
        alias = model_name.removeprefix(PROVIDER_NAME + "/")
        spec = next((spec for spec in MODELS if spec.id == alias), None)
        if spec is None:
            raise UserError(f"unknown Claude Code model {model_name!r}; use one of "
                            + ", ".join(spec.id for spec in MODELS))
        if extra_usage is not None and extra_usage not in EXTRA_USAGE_MODES:
            raise UserError(f"extra_usage: {extra_usage[:40]!r} is not one of {', '.join(EXTRA_USAGE_MODES)}")
        super().__init__(settings=settings)
        self._extra_usage = extra_usage
        self._spec = spec
        self._cwd = Path(cwd) if cwd is not None else None
        self._options = options
        self._environ = environ
        self._sessions = ConversationSessions(self._open_session)

    @property
    def model_name(self) -> str:
        return self._spec.id

    @property
    def system(self) -> str:
        return PROVIDER_NAME

    async def request(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                      model_request_parameters: ModelRequestParameters) -> ModelResponse:
        _, parameters = self.prepare_request(model_settings, model_request_parameters)
        async with self._events(messages, parameters) as events:
            async for event in events:
                if isinstance(event, Done):
                    return self._response(event.message)
                if isinstance(event, ErrorEvent):
                    raise model_error(self.model_name, event)
        raise exceptions.UnexpectedModelBehavior("the Claude Code stream ended without an answer")

    @asynccontextmanager
    async def request_stream(self, messages: list[ModelMessage], model_settings: ModelSettings | None,
                             model_request_parameters: ModelRequestParameters,
                             run_context: RunContext[Any] | None = None) -> AsyncGenerator[StreamedResponse]:
        _, parameters = self.prepare_request(model_settings, model_request_parameters)
        async with self._events(messages, parameters) as events:
            yield ClaudeCodeStreamedResponse(model_request_parameters=parameters, _model_name=self.model_name,
                                             _events=events)

    def _response(self, message: AssistantMessage) -> ModelResponse:
        return ModelResponse(parts=response_parts(message), usage=usage_of(message), model_name=self.model_name,
                             provider_name=PROVIDER_NAME, finish_reason=_FINISH.get(message.stop_reason))

    @asynccontextmanager
    async def _events(self, messages: list[ModelMessage],
                      parameters: ModelRequestParameters) -> AsyncGenerator[AsyncIterator[StreamEvent]]:
        """The provider's events for one request, on its conversation's host session."""
        context: Context = context_of(messages, parameters, _instructions(self, messages, parameters))
        async with self._sessions.stream(PROVIDER_NAME, self._spec, context, CancelSignal()) as events:
            yield events

    async def _open_session(self) -> HostSession:
        """A lasting session (its provider prewarms the next round's claude), for one run."""
        extension = ClaudeCodeExtension(extra_usage=self._extra_usage, options=self._options, environ=self._environ)
        host = HostSession([extension], command="hostlink")
        await host.start(cwd=self._cwd or Path.cwd(), project_trusted=False,
                         notifier=LogNotifier("hostlink.claude_code"))
        return host


def _instructions(model: Model, messages: list[ModelMessage], parameters: ModelRequestParameters) -> str | None:
    parts = model._get_instruction_parts(messages, parameters)  # the Model API for adapters
    return "\n\n".join(part.content for part in parts) if parts else None


@dataclass
class ClaudeCodeStreamedResponse(StreamedResponse):
    """The provider's stream as pydantic-ai events: a new part whenever the kind of content
    changes, tool calls whole (the provider proposes them complete)."""

    _model_name: str
    _events: AsyncIterator[StreamEvent]
    _timestamp: datetime = field(default_factory=lambda: datetime.now(UTC))

    async def _get_event_iterator(self) -> AsyncIterator[ModelResponseStreamEvent]:
        block, kind = -1, ""
        async for event in self._events:
            if isinstance(event, (TextDelta, ThinkingDelta, ToolCallEvent)) and (
                    event.type != kind or isinstance(event, ToolCallEvent)):
                block, kind = block + 1, event.type
            if isinstance(event, TextDelta):
                for item in self._parts_manager.handle_text_delta(vendor_part_id=block, content=event.delta):
                    yield item
            elif isinstance(event, ThinkingDelta):
                for item in self._parts_manager.handle_thinking_delta(vendor_part_id=block, content=event.delta):
                    yield item
            elif isinstance(event, ToolCallEvent):
                call = event.tool_call
                yield self._parts_manager.handle_tool_call_part(vendor_part_id=block, tool_name=call.name,
                                                                args=dict(call.arguments), tool_call_id=call.id)
            elif isinstance(event, Done):
                self._usage = usage_of(event.message)
                self.finish_reason = _FINISH.get(event.message.stop_reason)
            else:  # ErrorEvent, the stream's last
                raise model_error(self._model_name, event, in_stream=True)

    async def close_stream(self) -> None:
        """Nothing of its own to close: the request's context ends the provider stream."""

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def provider_name(self) -> str:
        return PROVIDER_NAME

    @property
    def provider_url(self) -> None:
        return None

    @property
    def timestamp(self) -> datetime:
        return self._timestamp


def usage_of(message: AssistantMessage) -> RequestUsage:
    """pydantic-ai counts cached tokens inside `input_tokens`; the provider apart."""
    usage = message.usage
    return RequestUsage(input_tokens=usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens,
                        output_tokens=usage.output_tokens, cache_read_tokens=usage.cache_read_tokens,
                        cache_write_tokens=usage.cache_write_tokens)


def model_error(model_name: str, error: ErrorEvent, *, in_stream: bool = False) -> exceptions.ModelAPIError:
    """The pydantic-ai error for a failed request: the provider's message (written to be
    shown), its code, and for a usage limit the seconds until it resets."""
    retry_after = None if error.resets_at is None else float(max(0, error.resets_at - int(time.time())))
    return _ERRORS.get(error.code, exceptions.ModelAPIError)(
        model_name, error.message, provider_error_code=error.code, retry_after=retry_after, in_stream=in_stream)
