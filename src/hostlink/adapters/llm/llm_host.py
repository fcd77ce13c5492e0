"""The llm host: a thin mapping of llm's models, tools and history onto a HostSession.

Kept out of the plugin's entry module so that `llm --help` (which only asks the plugin
for its commands) imports neither this nor `hostlink.host`. All extension code runs
on one asyncio loop in a daemon thread, so connections live across tool calls and a
chain's requests; an `atexit` handler shuts the host session down on that loop
(connections closed, children reaped, private files removed) before the process ends, and
SIGTERM or SIGHUP interrupt llm as Ctrl-C does, so that handler runs then too.
"""

from __future__ import annotations

import asyncio
import atexit
import base64
import concurrent.futures
import functools
import inspect
import json
import keyword
import os
import queue
import signal as signals
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal, TypeVar

import click
import llm
from llm.parts import (
    AttachmentPart,
    ReasoningPart,
    StreamEvent,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from pydantic import Field

from hostlink.adapters.llm.waits import next_item, result_of
from hostlink.cli.process_exit import freeze_heap_at_exit
from hostlink.host import (
    IMAGE_MIME_TYPES,
    AssistantMessage,
    CancelSignal,
    Context,
    Done,
    ErrorEvent,
    Extension,
    ImageContent,
    Message,
    ModelSpec,
    NoticeLevel,
    ProviderSpec,
    TextContent,
    TextDelta,
    ThinkingContent,
    ThinkingDelta,
    ToolCall,
    ToolCallEvent,
    ToolDefinition,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from hostlink.host.platform.console import TERMINATING_SIGNALS
from hostlink.host.session import HostSession
from hostlink.host.trust import project_trust

T = TypeVar("T")

# How long llm waits, at exit or after an interrupt, for extensions to finish cleaning up.
CLEANUP_SECONDS = 15.0


class ToolError(Exception):
    """A tool's error result; llm records it as the call's exception and tells the model."""


# --- llm history -> hostlink Context ---------------------------------------------------


def context_from_prompt(prompt: llm.Prompt) -> Context:
    """The whole conversation llm would send (`prompt.messages`) as a hostlink Context.

    Fails with `llm.ModelError` on what a Claude Code transcript cannot carry, rather
    than silently dropping it.
    """
    system: list[str] = []
    messages: list[Message] = []
    for message in prompt.messages:
        if message.role == "system":
            system.extend(part.text for part in message.parts if isinstance(part, TextPart))
        elif message.role == "user":
            messages.append(UserMessage(tuple(_user_content(message.parts))))
        elif message.role == "assistant":
            messages.append(AssistantMessage(tuple(_assistant_content(message.parts))))
        elif message.role == "tool":
            messages.extend(_tool_results(message.parts))
        else:
            raise llm.ModelError(f"unsupported message role in history: {message.role!r}")
    tools = tuple(
        ToolDefinition(tool.name, tool.description or "", tool.input_schema)
        for tool in prompt.tools
        if isinstance(tool, llm.Tool)
    )
    return Context("\n\n".join(system) or prompt.system, tuple(messages), tools)


def _user_content(parts: Sequence[Any]) -> Iterator[TextContent | ImageContent]:
    for part in parts:
        if isinstance(part, TextPart):
            yield TextContent(part.text)
        elif isinstance(part, AttachmentPart) and part.attachment is not None:
            yield _image(part.attachment)
        else:
            raise llm.ModelError(f"unsupported part in a user message: {type(part).__name__}")


def _assistant_content(parts: Sequence[Any]) -> Iterator[TextContent | ThinkingContent | ToolCall]:
    for part in parts:
        if isinstance(part, TextPart):
            yield TextContent(part.text)
        elif isinstance(part, ReasoningPart):
            if part.text:
                yield ThinkingContent(part.text)
        elif isinstance(part, ToolCallPart) and not part.server_executed:
            if not part.tool_call_id:
                raise llm.ModelError(f"a call of tool {part.name!r} in the history has no id")
            yield ToolCall(part.tool_call_id, part.name, dict(part.arguments))
        else:
            raise llm.ModelError(f"unsupported part in an assistant message: {type(part).__name__}")


def _tool_results(parts: Sequence[Any]) -> Iterator[ToolResultMessage]:
    for part in parts:
        if not isinstance(part, ToolResultPart) or part.server_executed:
            raise llm.ModelError(f"unsupported part in a tool message: {type(part).__name__}")
        if not part.tool_call_id:
            raise llm.ModelError(f"a result of tool {part.name!r} in the history has no id")
        content: list[TextContent | ImageContent] = [TextContent(part.output), *map(_image, part.attachments)]
        yield ToolResultMessage(part.tool_call_id, part.name, tuple(content), part.exception is not None)


def _image(attachment: llm.Attachment) -> ImageContent:
    mime_type = attachment.resolve_type()
    if mime_type not in IMAGE_MIME_TYPES:
        raise llm.ModelError(f"unsupported attachment type {mime_type!r}: only images are accepted")
    return ImageContent(attachment.base64_content(), mime_type)


# --- the host --------------------------------------------------------------------------


class _StderrNotifier:
    def notify(self, message: str, level: NoticeLevel = "info") -> None:
        from hostlink.host.output import strip_controls

        click.echo(f"hostlink {level}: {strip_controls(message)}", err=True)


class _Loop:
    """One asyncio loop in a daemon thread, where every extension coroutine runs."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._tasks: dict[concurrent.futures.Future[Any], asyncio.Task[Any]] = {}
        self._thread = threading.Thread(target=self._loop.run_forever, name="hostlink-llm", daemon=True)
        self._thread.start()

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    def start(self, make: Callable[[], Coroutine[Any, Any, T]], future: concurrent.futures.Future[T]) -> None:
        """Run `make()` on the loop into `future`, which the caller made before calling.

        An interrupt can land anywhere in the caller, even before it would have held a future
        returned by the loop; holding it first, the caller always finds the work either not
        begun (`future.cancel()` succeeds and it never begins) or begun (to be told by its
        signal and waited for), never running on unseen after the caller returned.
        """

        def begin() -> None:
            if not future.set_running_or_notify_cancel():
                return
            task = self._loop.create_task(make())  # `make` only creates a coroutine: it raises nothing
            self._tasks[future] = task
            task.add_done_callback(functools.partial(self._settle, future))

        self._loop.call_soon_threadsafe(begin)

    def _settle(self, future: concurrent.futures.Future[T], task: asyncio.Task[T]) -> None:
        del self._tasks[future]
        if task.cancelled():
            future.set_exception(concurrent.futures.CancelledError())
        elif (error := task.exception()) is not None:
            future.set_exception(error)
        else:
            future.set_result(task.result())

    def abandon(self, future: concurrent.futures.Future[Any]) -> None:
        """Cancel the task behind a begun `future` whose work ignored its cancel signal."""

        def cancel() -> None:
            if (task := self._tasks.get(future)) is not None:
                task.cancel()

        self._loop.call_soon_threadsafe(cancel)

    def close(self) -> None:
        """Cancel what extensions left running (as `asyncio.run` does, bounded), then stop."""
        concurrent.futures.wait([self.submit(_finish_loop())], timeout=CLEANUP_SECONDS)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()


async def _finish_loop() -> None:
    loop = asyncio.get_running_loop()
    others = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in others:
        task.cancel()
    await asyncio.gather(*others, return_exceptions=True)
    await loop.shutdown_asyncgens()
    await loop.shutdown_default_executor()


_END = object()


def _interrupt_on_termination() -> None:
    """SIGTERM and SIGHUP (Ctrl+Break on Windows) raise KeyboardInterrupt in llm's main thread, as Ctrl-C does, so
    the interrupted call is cancelled and the exit handler shuts the session down. A handler
    llm (or an embedding program) installed itself is left alone."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in TERMINATING_SIGNALS:
        if signals.getsignal(signum) is signals.SIG_DFL:
            signals.signal(signum, signals.default_int_handler)


class LlmHost:
    """Drives a `HostSession` for one llm process.

    Registration happens here at construction (no I/O); the loop thread and the session
    start on first use, and `close` (registered with `atexit`) ends them.
    """

    def __init__(self, extensions: Sequence[Extension]) -> None:
        self.session = HostSession(extensions, command="llm")
        self.registry = self.session.registry
        self._lock = threading.Lock()
        self._loop: _Loop | None = None
        self._session_error: BaseException | None = None
        self._session_started = False

    # lifecycle

    def _ready_loop(self) -> _Loop:
        """The loop, with the host session started on it (once)."""
        with self._lock:
            if self._loop is None:
                self._loop = _Loop()
                freeze_heap_at_exit()  # registered first, so it runs after close
                atexit.register(self.close)
                _interrupt_on_termination()
            if not self._session_started:
                self._session_started = True
                from hostlink.cli.terminal_ask import terminal_ask

                cwd, notifier = Path(os.getcwd()), _StderrNotifier()
                trust = project_trust(cwd, os.environ)
                if trust.warning is not None:
                    notifier.notify(trust.warning, "warning")
                start = self.session.start(
                    cwd=cwd, project_trusted=trust.trusted, notifier=notifier, ask=terminal_ask(),
                    trust_again=lambda: project_trust(cwd, os.environ).trusted)
                try:
                    self._loop.submit(start).result()
                except Exception as exc:  # noqa: BLE001 - kept, and raised to every later call below
                    self._session_error = exc
            if self._session_error is not None:
                raise self._session_error
            return self._loop

    def close(self) -> None:
        """Shut the session down on the loop (bounded), then stop the loop. Idempotent."""
        with self._lock:
            loop, self._loop = self._loop, None
            started, self._session_started = self._session_started, False
        if loop is None:
            return
        atexit.unregister(self.close)
        try:
            if started:
                loop.submit(self.session.shutdown()).result(timeout=CLEANUP_SECONDS)
        except Exception as exc:  # noqa: BLE001 - the process is ending: report, don't raise
            _StderrNotifier().notify(f"session shutdown failed: {str(exc) or type(exc).__name__}", "error")
        finally:
            loop.close()

    # running extension code from llm's synchronous world

    def call(self, make: Callable[[], Coroutine[Any, Any, T]], signal: CancelSignal) -> T:
        """Run one coroutine on the loop and wait; an interrupt cancels it via `signal`."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        try:
            self._ready_loop().start(make, future)
            return result_of(future)
        except BaseException:
            if not future.done():
                signal.cancel("interrupted")
                if not future.cancel() and not concurrent.futures.wait([future], timeout=CLEANUP_SECONDS).done:
                    self._abandon(future)
            raise

    def _abandon(self, future: concurrent.futures.Future[Any]) -> None:
        if self._loop is not None:
            self._loop.abandon(future)

    def iterate(self, make: Callable[[], AsyncIterator[T]], signal: CancelSignal) -> Iterator[T]:
        """Yield the items of an async iterator as they arrive, from a synchronous generator.

        When the consumer stops early (closed generator, interrupt), `signal` is cancelled
        and the iterator is drained and closed on the loop before control returns.
        """
        items: queue.SimpleQueue[Any] = queue.SimpleQueue()

        async def pump() -> None:
            try:
                iterator = make()
                try:
                    async for item in iterator:
                        items.put(item)
                finally:
                    aclose = getattr(iterator, "aclose", None)
                    if aclose is not None:
                        await aclose()
            finally:
                items.put(_END)

        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        finished = False
        try:
            self._ready_loop().start(pump, future)
            while (item := next_item(items)) is not _END:
                yield item
            finished = True
            result_of(future)
        finally:
            if not finished:
                signal.cancel("the response was abandoned")
                if not future.cancel():  # begun: wait for it to end (bounded)
                    try:
                        while items.get(timeout=CLEANUP_SECONDS) is not _END:
                            pass
                    except queue.Empty:
                        self._abandon(future)

    # what llm sees

    def models(self) -> list[llm.Model]:
        return [
            HostlinkModel(self, provider, spec)
            for provider in self.registry.providers.values()
            for spec in provider.models
        ]

    def tools(self) -> list[llm.Tool]:
        return [self._tool(spec) for spec in self.registry.tools.values()]

    def _tool(self, spec: ToolSpec) -> llm.Tool:
        def implementation(**arguments: Any) -> str | llm.ToolOutput:
            return self.run_tool(spec, arguments)

        # A plain-JSON copy: llm hashes and stores the schema.
        schema = json.loads(json.dumps(spec.parameters))
        implementation.__signature__ = _signature(schema)  # type: ignore[attr-defined]  # typeshed omits it
        return llm.Tool(name=spec.name, description=spec.description, input_schema=schema,
                        implementation=implementation)

    def run_tool(self, spec: ToolSpec, arguments: dict[str, Any]) -> str | llm.ToolOutput:
        """Execute a hostlink tool for llm: text out, images as attachments, errors raised."""
        signal = CancelSignal()
        result = self.call(lambda: self.session.run_tool(spec.name, arguments, signal), signal)
        text = "\n".join(item.text for item in result.content if isinstance(item, TextContent))
        if result.is_error:
            raise ToolError(text)
        images = [
            llm.Attachment(type=item.mime_type, content=base64.b64decode(item.data))
            for item in result.content
            if isinstance(item, ImageContent)
        ]
        return llm.ToolOutput(output=text, attachments=images) if images else text


_JSON_TYPES = {"string": str, "integer": int, "number": float, "boolean": bool, "object": dict, "array": list}


def _signature(schema: dict[str, Any]) -> inspect.Signature:
    """What `llm tools` shows for a tool: its schema's properties as keyword arguments."""
    required = set(schema.get("required", ()))
    parameters = [
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            default=inspect.Parameter.empty if name in required else None,
            annotation=Any if not isinstance(prop, dict) or not isinstance(prop.get("type"), str)
            else _JSON_TYPES.get(prop["type"], Any),  # a list of types (["string", "null"]): any
        )
        for name, prop in schema.get("properties", {}).items()
        if name.isidentifier() and not keyword.iskeyword(name)
    ]
    return inspect.Signature(parameters)


class ClaudeCodeOptions(llm.Model.Options):
    """`-o extra_usage refuse`: the request's own extra-usage guard (see `claude-code usage`)."""

    extra_usage: Literal["allow", "warn", "refuse"] | None = Field(
        default=None, description="When the Claude plan's window is used up and requests would draw on extra usage: "
                                  "allow, warn (one notice) or refuse (an error until the window resets). "
                                  "Default: HOSTLINK_CLAUDE_EXTRA_USAGE, else warn.")


class HostlinkModel(llm.Model):
    """One model of a hostlink provider, e.g. `claude-code/sonnet`."""

    can_stream = True
    supports_tools = True

    def __init__(self, host: LlmHost, provider: ProviderSpec, spec: ModelSpec) -> None:
        if provider.name == "claude-code":
            self.Options = ClaudeCodeOptions
        self.model_id = f"{provider.name}/{spec.id}"
        self.attachment_types = IMAGE_MIME_TYPES if "image" in spec.input else frozenset()
        self._host = host
        self._provider = provider
        self._spec = spec

    def __str__(self) -> str:
        note = " (unavailable)" if self._provider.unavailable else ""
        return f"{self._spec.name}: {self.model_id}{note}"

    def execute(
        self,
        prompt: llm.Prompt,
        stream: bool,
        response: llm.Response,
        conversation: llm.Conversation | None,
    ) -> Iterator[StreamEvent]:
        if self._provider.unavailable:
            raise llm.ModelError(f"{self.model_id} is unavailable: {self._provider.unavailable}")
        context = context_from_prompt(prompt)
        extra_usage = getattr(prompt.options, "extra_usage", None)
        if extra_usage is not None:
            context = replace(context, options={"extra_usage": extra_usage})
        signal = CancelSignal()
        outcome: Done | ErrorEvent | None = None
        # Read to the stream's end (it ends after its Done or ErrorEvent), so the provider
        # finishes its own cleanup instead of being cancelled.
        open_stream = self._host.session.stream  # the `stream` flag has no effect: llm joins chunks either way
        for event in self._host.iterate(lambda: open_stream(self._provider.name, self._spec, context, signal), signal):
            if isinstance(event, TextDelta):
                yield StreamEvent(type="text", chunk=event.delta)
            elif isinstance(event, ThinkingDelta):
                yield StreamEvent(type="reasoning", chunk=event.delta)
            elif isinstance(event, ToolCallEvent):
                call = event.tool_call
                response.add_tool_call(
                    llm.ToolCall(name=call.name, arguments=dict(call.arguments), tool_call_id=call.id)
                )
            else:  # Done or ErrorEvent: the last event
                outcome = event
        if isinstance(outcome, ErrorEvent):
            raise llm.ModelError(outcome.message)
        if outcome is None:
            raise llm.ModelError(f"{self.model_id}: the provider ended the response without a result")
        _record_done(response, outcome.message)


def _record_done(response: llm.Response, message: AssistantMessage) -> None:
    usage = message.usage
    cache = {
        key: value
        for key, value in (
            ("cache_read_tokens", usage.cache_read_tokens),
            ("cache_write_tokens", usage.cache_write_tokens),
        )
        if value
    }
    response.set_usage(input=usage.input_tokens, output=usage.output_tokens, details=cache or None)
    if message.model:
        response.set_resolved_model(message.model)
