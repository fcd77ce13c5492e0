"""One Claude Code request as the LangChain and LiteLLM hosts make it: the model a name
means, the tool choice applied to the context, the request's events on a host session of
its own, and a bridge for the frameworks' synchronous calls.

Like the pydantic-ai host, each request runs on a host session of its own (the provider
keeps nothing between requests: the whole history travels each time), so concurrent
requests share no state and nothing is left once a request ends. Notices said during the
request (the plan's rate-limit warnings) are logged and kept, for the host to put beside
the answer.
"""

from __future__ import annotations

import logging
import queue
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar, cast

import anyio
import anyio.from_thread

from hostlink.claude_code import MODELS, PROVIDER_NAME
from hostlink.host import CancelSignal, Context, ModelSpec, NoticeLevel, StreamEvent, ToolDefinition
from hostlink.host.session import HostSession

if TYPE_CHECKING:
    from hostlink.claude_code import ClaudeTransportOptions

T = TypeVar("T")

# How long an abandoned request may take to stop its claude before it is left to the provider.
CLEANUP_SECONDS = 15.0
_LEVELS = {"info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


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


class KeptNotices:
    """The host's notifier for one request: each notice logged on `logger` at its level and
    kept in `notices`, to be returned with the answer."""

    def __init__(self, logger: str) -> None:
        self._log = logging.getLogger(logger)
        self.notices: list[str] = []

    def notify(self, message: str, level: NoticeLevel = "info") -> None:
        self._log.log(_LEVELS.get(level, logging.INFO), "%s", message)
        self.notices.append(message)


@dataclass(frozen=True)
class ClaudeSettings:
    """What `ClaudeCodeModel` takes, for the other hosts: `cwd` (where `claude` runs;
    default: the current directory when a request starts), `extra_usage`, and for tests
    `options` (a local fake API) and `environ` (a PATH that finds a particular `claude`)."""

    cwd: Path | None = None
    extra_usage: str | None = None
    options: ClaudeTransportOptions | None = None
    environ: Mapping[str, str] | None = field(default=None, hash=False)


def claude_host(settings: ClaudeSettings) -> HostSession:
    """A host session (not started) over the Claude Code extension, for one request; its
    registry holds the provider, for a host that reads a request against it first."""
    from hostlink.claude_code import ClaudeCodeExtension

    extension = ClaudeCodeExtension(extra_usage=settings.extra_usage, options=settings.options,
                                    environ=settings.environ)
    return HostSession([extension], command="hostlink", lasting=False)


@asynccontextmanager
async def claude_events(settings: ClaudeSettings, spec: ModelSpec, context: Context, notices: KeptNotices,
                        host: HostSession | None = None) -> AsyncGenerator[AsyncIterator[StreamEvent]]:
    """The provider's events for one request on a host session of its own (`host`, or a new
    one). Leaving early (an error, a cancelled task, a closed stream) cancels the request and
    waits, shielded and bounded, for the provider to stop its `claude`."""
    host = host or claude_host(settings)
    signal = CancelSignal()
    await host.start(cwd=settings.cwd or Path.cwd(), project_trusted=False, notifier=notices)
    events = host.stream(PROVIDER_NAME, spec, context, signal)
    try:
        yield events
    finally:
        with anyio.CancelScope(shield=True), anyio.move_on_after(CLEANUP_SECONDS):
            signal.cancel("the request was abandoned")
            async for _ in events:  # the provider ends with its own cleanup done
                pass
            await host.shutdown()


def run_sync(work: Callable[[], Awaitable[T]]) -> T:
    """`work()` to its end from synchronous code, on an event loop of its own in a worker
    thread (the caller may be inside a running loop, as a notebook is). Interrupting the
    caller (Ctrl-C) cancels the work, which stops its `claude`, before the error goes on."""
    with anyio.from_thread.start_blocking_portal() as portal:
        future = portal.start_task_soon(work)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise


_END = object()


def iterate_sync(items: Callable[[], AsyncIterator[T]]) -> Iterator[T]:
    """The items of an async iterator from synchronous code: one task in a worker thread's
    loop reads them all, so the iterator's own scopes stay in one task. Leaving the loop
    early (a `break`, an error, Ctrl-C) cancels that task, which stops its `claude`."""
    handoff: queue.SimpleQueue[object] = queue.SimpleQueue()

    async def pump() -> None:
        try:
            async for item in items():
                handoff.put(item)
        except Exception as error:  # noqa: BLE001  # handed to the reader, who raises it
            handoff.put(error)
            return
        handoff.put(_END)

    with anyio.from_thread.start_blocking_portal() as portal:
        future = portal.start_task_soon(pump)
        try:
            while (item := handoff.get()) is not _END:
                if isinstance(item, Exception):
                    raise item
                yield cast(T, item)
        finally:
            future.cancel()
