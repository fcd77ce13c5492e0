"""The host-neutral extension API: what an extension registers and what a host calls.

Specs (tools, commands, models, providers), the `Registry` they are claimed in, the
`Extension` protocol, the `Session` an extension sees, cancellation, questions
and notices. Everything here is plain data and protocols: no I/O, no imports of heavy
libraries, so registering an extension costs nothing. The message model is
`hostlink.host.messages`; `hostlink.host` is the face over both.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from hostlink.host.messages import (
    Context,
    ErrorEvent,
    StreamEvent,
    ToolDefinition,
    UserContent,
)

if TYPE_CHECKING:
    from hostlink.host.output import OutputSession

# --- cancellation ---------------------------------------------------------------------


class Cancelled(Exception):
    """Raised by `CancelSignal.raise_if_cancelled`."""


class CancelSignal:
    """A one-way cancellation flag handed to every tool call and provider request.

    `cancel` runs the registered callbacks synchronously in the caller's thread, so an
    async extension registers a callback that cancels its own scope on its own loop.
    """

    def __init__(self) -> None:
        self._reason: str | None = None
        self._callbacks: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        return self._reason is not None

    @property
    def reason(self) -> str | None:
        return self._reason

    def cancel(self, reason: str = "cancelled") -> None:
        if self._reason is not None:
            return
        self._reason = reason
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` once on cancellation (at once if already cancelled).

        Returns a function that unregisters it.
        """
        if self._reason is not None:
            callback()
            return lambda: None
        self._callbacks.append(callback)

        def unregister() -> None:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

        return unregister

    def raise_if_cancelled(self) -> None:
        if self._reason is not None:
            raise Cancelled(self._reason)


# --- host services --------------------------------------------------------------------

NoticeLevel = Literal["info", "warning", "error"]


class Notifier(Protocol):
    """Where an extension shows the user a short notice (never model context)."""

    def notify(self, message: str, level: NoticeLevel = "info") -> None: ...


@dataclass(frozen=True)
class Session:
    """What the host tells extensions at `session_start`.

    `project_trusted` is the host's decision; extensions never infer trust themselves.
    `lasting` is False in a one-shot host (a CLI command): what it would leave to finish
    later (an overflow file, a sign-in by link) is gone when it exits. `output` is the
    session's one overflow budget, shared by every extension; None when not lasting.
    `command` is how a person runs this host's commands (`hostlink`, `llm`): advice
    names it. `ask` is how the host asks the person a question, None when it cannot.
    `complete(model, context, signal)` streams an answer of a model the host knows
    (`claude-code/haiku`): how an extension gets a model answer without holding one.
    `trust_again` is the host's decision made anew, for an extension that reads the project
    again mid-session (a reload): trust by record lasts only while the project's files are as
    trusted. None: `project_trusted` holds for the whole session.
    `provider_hooks` is what a provider calls around each request (the session's
    registry): see `ProviderHooks`. `conversations` is how many conversations the host
    carries on at once (`hostlink serve`: its request slots; one elsewhere): what an
    extension keeps per conversation (the Claude Code provider's prewarmed `claude`) is
    bounded by it.
    """

    cwd: Path
    project_trusted: bool
    notifier: Notifier
    output: OutputSession | None
    command: str
    lasting: bool
    ask: Ask | None = None
    complete: Complete | None = None
    trust_again: Callable[[], bool] | None = None
    provider_hooks: ProviderHooks | None = None
    conversations: int = 1


@dataclass(frozen=True)
class Question:
    """A form a server asks the person to fill in (MCP elicitation). `asker` names the
    server; `message` and the field texts in `fields` are the server's words, sanitized
    and bounded, to be shown as the server's. `fields` is the flat schema MCP allows: an
    object whose properties are strings, numbers, integers, booleans or choices — one of an
    `enum` (maybe titled by `enumNames`) or a `oneOf` of `{const, title}`, or several: an
    `array` whose `items` are an `enum` or an `anyOf` of `{const, title}`."""

    asker: str
    message: str
    fields: Mapping[str, Any]


@dataclass(frozen=True)
class Answer:
    """The person's answer: `accept` with `content` (field name -> value), `decline`
    (an explicit no) or `cancel` (dismissed without a choice)."""

    action: Literal["accept", "decline", "cancel"]
    content: Mapping[str, Any] | None = None


# How a host asks the person; a host that cannot ask (no terminal, a server) has none.
Ask = Callable[[Question], Awaitable[Answer]]
# A model answer from the host: ``complete("provider/model", context, signal)``.
Complete = Callable[[str, "Context", "CancelSignal"], AsyncIterator["StreamEvent"]]


# --- registrations --------------------------------------------------------------------


@dataclass(frozen=True)
class ToolResult:
    content: Sequence[UserContent]
    details: Mapping[str, Any] | None = None
    is_error: bool = False


ToolExecute = Callable[[Mapping[str, Any], CancelSignal], Awaitable[ToolResult]]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: Mapping[str, Any]
    execute: ToolExecute
    label: str = ""

    def definition(self) -> ToolDefinition:
        return ToolDefinition(self.name, self.description, self.parameters)


class CommandFailed(Exception):
    """A command's failure; its message is safe to show to the person who ran it."""


@dataclass(frozen=True)
class CommandSpec:
    """A user command (`/mcp …` in an interactive host). `run` returns text to show, or
    raises `CommandFailed`."""

    name: str
    description: str
    run: Callable[[Sequence[str], CancelSignal], Awaitable[str]]




@dataclass(frozen=True)
class ModelSpec:
    id: str
    name: str
    reasoning: bool = False
    input: Sequence[Literal["text", "image"]] = ("text",)
    context_window: int = 0
    max_tokens: int = 0


ProviderStream = Callable[[ModelSpec, Context, CancelSignal], AsyncIterator[StreamEvent]]


@dataclass(frozen=True)
class ProviderSpec:
    """A model provider. A stream ends with exactly one `Done` or `ErrorEvent`.

    `unavailable` explains, when set, why the provider cannot run and how to fix it.
    """

    name: str
    models: Sequence[ModelSpec]
    stream: ProviderStream
    unavailable: str | None = None

    def model(self, model_id: str) -> ModelSpec | None:
        """The model this provider offers as `model_id`, or None."""
        return next((spec for spec in self.models if spec.id == model_id), None)


@dataclass(frozen=True)
class ProviderRequest:
    """A provider request about to be made: what `before_provider_request` handlers see."""

    provider: str
    model: ModelSpec
    context: Context


@dataclass(frozen=True)
class ProviderResponse:
    """A provider's response boundary: capabilities known, no content published yet. A
    transport without an HTTP response (the headless `claude` CLI) reports a synthetic
    success status and no headers."""

    provider: str
    model: ModelSpec
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)


class ProviderRefused(Exception):
    """Raised by a `before_provider_request` handler to stop the request before it starts;
    the request fails with `error`."""

    def __init__(self, error: ErrorEvent) -> None:
        super().__init__(error.message)
        self.error = error


# A handler returns a replacement Context for the request (or None to keep it as it is).
BeforeProviderRequest = Callable[[ProviderRequest], Awaitable[Context | None]]
AfterProviderResponse = Callable[[ProviderResponse], Awaitable[None]]


class ProviderHooks(Protocol):
    """What a provider calls around each request, in this order: `before_provider_request`
    before it builds anything from the context (the answer is the context to use), and
    `after_provider_response` at its response boundary, before any content is mapped (an
    exception fails the request)."""

    async def before_provider_request(self, request: ProviderRequest) -> Context: ...

    async def after_provider_response(self, response: ProviderResponse) -> None: ...


SessionStartHandler = Callable[[Session], Awaitable[None]]
SessionShutdownHandler = Callable[[], Awaitable[None]]


class Extension(Protocol):
    """An extension registers what it offers; registration must do no I/O."""

    def register(self, registry: Registry) -> None: ...


class Registry:
    """Collects what extensions register; a host adapter reads it and drives the lifecycle."""

    def __init__(self) -> None:
        self.tools: dict[str, ToolSpec] = {}
        self.commands: dict[str, CommandSpec] = {}
        self.providers: dict[str, ProviderSpec] = {}
        self._on_start: list[SessionStartHandler] = []
        self._on_shutdown: list[SessionShutdownHandler] = []
        self._before_request: list[BeforeProviderRequest] = []
        self._after_response: list[AfterProviderResponse] = []

    def register_tool(self, tool: ToolSpec) -> None:
        self._claim(self.tools, tool.name, tool, "tool")

    def register_command(self, command: CommandSpec) -> None:
        self._claim(self.commands, command.name, command, "command")

    def register_provider(self, provider: ProviderSpec) -> None:
        self._claim(self.providers, provider.name, provider, "provider")

    def on_session_start(self, handler: SessionStartHandler) -> None:
        self._on_start.append(handler)

    def on_session_shutdown(self, handler: SessionShutdownHandler) -> None:
        self._on_shutdown.append(handler)

    def on_before_provider_request(self, handler: BeforeProviderRequest) -> None:
        self._before_request.append(handler)

    def on_after_provider_response(self, handler: AfterProviderResponse) -> None:
        self._after_response.append(handler)

    async def before_provider_request(self, request: ProviderRequest) -> Context:
        """The request's context after every handler, in registration order; each sees the
        replacement of the one before. `ProviderRefused` stops the request."""
        for handler in self._before_request:
            replacement = await handler(request)
            if replacement is not None:
                request = ProviderRequest(request.provider, request.model, replacement)
        return request.context

    async def after_provider_response(self, response: ProviderResponse) -> None:
        """Tell every observer, in registration order; the first failure fails the request."""
        for handler in self._after_response:
            await handler(response)

    async def start_session(self, session: Session) -> None:
        for handler in self._on_start:
            await handler(session)

    async def shutdown_session(self) -> None:
        """Run every shutdown handler (in reverse order), even when one fails."""
        errors: list[BaseException] = []
        for handler in reversed(self._on_shutdown):
            try:
                await handler()
            except Exception as exc:  # noqa: BLE001 - every extension must get its turn
                errors.append(exc)
        if errors:
            raise errors[0]

    @staticmethod
    def _claim(table: dict[str, Any], name: str, value: Any, kind: str) -> None:
        if name in table:
            raise ValueError(f"{kind} {name!r} is already registered")
        table[name] = value
