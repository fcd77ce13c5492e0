"""Claude Code requests as the LangChain and LiteLLM hosts make them: the model a name means,
the tool choice applied to the context, and `Conversations`, which runs a model's requests.

Like the pydantic-ai host, the rounds of one conversation share a host session
(`hostlink.claude_code.rounds`): a request whose messages extend an earlier round's that
ended in tool calls continues on that round's session and finds its next `claude` prewarmed.
Concurrent conversations share nothing. The frameworks' synchronous calls run on an event
loop the model keeps in a daemon thread, so their rounds share sessions too. Notices said
during a request (the plan's rate-limit warnings) are logged and kept with that request, for
the host to put beside the answer.
"""

from __future__ import annotations

import queue
import threading
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

import anyio.from_thread

from hostlink.adapters.notices import REQUEST_NOTICES, KeptNotices
from hostlink.claude_code import MODELS, PROVIDER_NAME
from hostlink.host import CancelSignal, Context, ModelSpec, StreamEvent, ToolDefinition
from hostlink.host.session import HostSession

if TYPE_CHECKING:
    from hostlink.claude_code import ClaudeTransportOptions, ConversationSessions
    from hostlink.host.registry import ProviderSpec

T = TypeVar("T")

# How long an abandoned request may take to stop its claude (as `rounds.CLEANUP_SECONDS`)
CLEANUP_SECONDS = 15.0


def model_spec(name: str) -> ModelSpec | None:
    """The alias a model name means: `sonnet`, `claude-code/sonnet`, or an id of a family
    (`claude-sonnet-5-5`): the CLI's alias of that family, so the CLI picks the model."""
    name = name.removeprefix(PROVIDER_NAME + "/")
    spec = next((spec for spec in MODELS if spec.id == name), None)
    if spec is not None or not name.startswith("claude-"):
        return spec
    words = name.split("[", 1)[0].split("-")[1:]
    return next((spec for spec in MODELS if spec.id in words), None)


def unknown_model(name: str) -> str:
    return f"unknown Claude Code model {name[:80]!r}; use one of " + ", ".join(spec.id for spec in MODELS)


def extra_usage_problem(value: str | None) -> str | None:
    from hostlink.claude_code import EXTRA_USAGE_MODES

    if value is None or value in EXTRA_USAGE_MODES:
        return None
    return f"extra_usage: {value[:40]!r} is not one of {', '.join(EXTRA_USAGE_MODES)}"


@dataclass(frozen=True)
class ToolChoice:
    """`auto` | `none` | `any` (some tool must be called) | `tool` (`name` must be)."""

    mode: Literal["auto", "none", "any", "tool"] = "auto"
    name: str | None = None


def with_tools(context: Context, tools: list[ToolDefinition], choice: ToolChoice,
               answer_tool: str | None = None) -> Context:
    """The context offering `tools` as `choice` allows (as `hostlink serve` does: `none`
    offers none, a named tool is the only one offered and must be called). A choice that
    cannot be honoured raises `ValueError` naming it."""
    system = [context.system_prompt] if context.system_prompt else []
    if choice.mode == "none":
        tools = []
    elif choice.mode == "any":
        if not tools:
            raise ValueError("tool_choice: a tool must be called but no tools are bound")
        system.append("In this answer you must call at least one of the available tools.")
    elif choice.mode == "tool":
        tools = [tool for tool in tools if tool.name == choice.name]
        if not tools:
            raise ValueError(f"tool_choice: {str(choice.name)[:80]!r} is not among the bound tools")
        system.append(f"In this answer you must call the tool {choice.name}.")
    names = [tool.name for tool in tools]
    if len(set(names)) != len(names):
        raise ValueError("tools: two tools share one name")
    return replace(context, system_prompt="\n\n".join(system), tools=tuple(tools),
                   settings=replace(context.settings, answer_tool=answer_tool))


@dataclass(frozen=True)
class ClaudeSettings:
    """What `ClaudeCodeModel` takes, for the other hosts: `cwd` (where `claude` runs;
    default: the current directory when a request starts), `extra_usage`, and for tests
    `options` (a local fake API) and `environ` (a PATH that finds a particular `claude`)."""

    cwd: Path | None = None
    extra_usage: str | None = None
    options: ClaudeTransportOptions | None = None
    environ: Mapping[str, str] | None = field(default=None, hash=False)


class Conversations:
    """One model's requests: each on its conversation's host session (see the module
    docstring), the synchronous ones on the model's own event loop. Parked sessions end at
    the prewarm idle bound, at `close`, when this object is garbage-collected, and at exit."""

    def __init__(self, settings: ClaudeSettings) -> None:
        self.settings = settings
        self._sessions: ConversationSessions | None = None  # at the first request: the provider loads then
        self._lock = threading.Lock()
        self._portal: anyio.from_thread.BlockingPortal | None = None
        self._stop_portal: weakref.finalize[Any, Any] | None = None
        self._provider: ProviderSpec | None = None

    @property
    def provider(self) -> ProviderSpec:
        """The provider, registered but not started: for reading a request against it."""
        if self._provider is None:
            self._provider = self._host().registry.providers[PROVIDER_NAME]
        return self._provider

    def _host(self) -> HostSession:
        from hostlink.claude_code import ClaudeCodeExtension

        extension = ClaudeCodeExtension(extra_usage=self.settings.extra_usage, options=self.settings.options,
                                        environ=self.settings.environ)
        return HostSession([extension], command="hostlink")

    async def _open_session(self) -> HostSession:
        """A lasting session (its provider prewarms the next round's claude)."""
        host = self._host()
        await host.start(cwd=self.settings.cwd or Path.cwd(), project_trusted=False,
                         notifier=KeptNotices("hostlink.claude_code"))
        return host

    @asynccontextmanager
    async def events(self, spec: ModelSpec, context: Context,
                     notices: list[str]) -> AsyncGenerator[AsyncIterator[StreamEvent]]:
        """The provider's events for one request, its notices added to `notices`. Leaving
        early (an error, a cancelled task, a closed stream) cancels the request and waits,
        shielded and bounded, for the provider to stop its `claude`."""
        kept = REQUEST_NOTICES.set(notices)
        try:
            async with self._conversation_sessions().stream(PROVIDER_NAME, spec, context, CancelSignal()) as events:
                yield events
        finally:
            with suppress(ValueError):  # ended in another context (a generator closed late)
                REQUEST_NOTICES.reset(kept)

    def close(self) -> None:
        """End the parked sessions and the synchronous calls' loop now."""
        with self._lock:
            stop, self._stop_portal, self._portal = self._stop_portal, None, None
        if stop is not None:
            stop()
        if self._sessions is not None:
            self._sessions.end_all()  # those of the callers' own loops

    def _conversation_sessions(self) -> ConversationSessions:
        from hostlink.claude_code import ConversationSessions

        if self._sessions is None:
            self._sessions = ConversationSessions(self._open_session, follow_task=False)
        return self._sessions

    def _loop(self) -> anyio.from_thread.BlockingPortal:
        with self._lock:
            if self._portal is None:
                manager = anyio.from_thread.start_blocking_portal()
                self._portal = manager.__enter__()
                # at collection or exit: the sessions parked on the loop end, then the loop
                self._stop_portal = weakref.finalize(self, _stop_loop, manager, self._portal,
                                                     self._conversation_sessions().ender())
            return self._portal

    def run_sync(self, work: Callable[[], Awaitable[T]]) -> T:
        """`work()` to its end from synchronous code (the caller may be inside a running
        loop, as a notebook is). Interrupting the caller (Ctrl-C) cancels the work and waits,
        bounded, for its `claude` to stop before the error goes on."""
        ended = threading.Event()

        async def guarded() -> T:
            try:
                return await work()
            finally:
                ended.set()

        future = self._loop().start_task_soon(guarded)
        try:
            return future.result()
        except BaseException:
            if future.cancel():
                ended.wait(CLEANUP_SECONDS)
            raise

    def iterate_sync(self, items: Callable[[], AsyncIterator[T]]) -> Iterator[T]:
        """The items of an async iterator from synchronous code: one task on the model's loop
        reads them all, so the iterator's own scopes stay in one task. Leaving early (a
        `break`, an error, Ctrl-C) cancels that task and waits, bounded, for its `claude` to
        stop."""
        handoff: queue.SimpleQueue[object] = queue.SimpleQueue()
        ended = threading.Event()

        async def pump() -> None:
            try:
                async for item in items():
                    handoff.put(item)
                handoff.put(_END)
            except Exception as error:  # noqa: BLE001  # handed to the reader, who raises it
                handoff.put(error)
            finally:
                ended.set()

        future = self._loop().start_task_soon(pump)
        try:
            while (item := handoff.get()) is not _END:
                if isinstance(item, Exception):
                    raise item
                yield cast(T, item)
        finally:
            if future.cancel():
                ended.wait(CLEANUP_SECONDS)


def _stop_loop(manager: Any, portal: anyio.from_thread.BlockingPortal,
               end_sessions: Callable[[], Awaitable[None]]) -> None:
    """Shut the sessions parked on the portal's loop down, bounded, then end the loop; not
    from the loop's own thread (a collection there leaves the loop to the program's exit)."""
    try:
        portal.call(lambda: _bounded(end_sessions))
    except RuntimeError:  # the loop's own thread, or the loop already gone
        return
    manager.__exit__(None, None, None)


async def _bounded(work: Callable[[], Awaitable[None]]) -> None:
    with anyio.move_on_after(CLEANUP_SECONDS):
        await work()


_END = object()
