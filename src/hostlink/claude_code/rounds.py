"""One host session per conversation, kept across its rounds, for hosts whose framework sends
each round as a request of its own with the whole history (pydantic-ai, LangChain, LiteLLM).

Why: the provider prewarms the next round's `claude` on its session while the host runs the
proposed tools (`hostlink.claude_code.prewarm`). A host that opened a session per request
would stop that child unused and pay a cold start every round. So a round that ends with tool
calls *parks* its session under the request's messages, and the next request whose messages
extend them (the same history, then the answer and the tool results) continues on it and finds
the child ready. That is the same recognition `hostlink serve` relies on: the follow-up is
the request whose child's settings equal the previous round's; here the history also says
which conversation it is, so concurrent conversations never share a session.

Bounds: a session is used by one request at a time (taking a parked one removes it); one that
ends with an answer, an error or a cancellation is shut down at once; a parked session is shut
down when the task that runs the conversation ends (the agent run, cancelled or failed between
rounds; see `_run_task`) for a host whose framework runs a conversation in one task
(`follow_task`, pydantic-ai), when it is not continued within the prewarm idle bound (its
child is stopped by then anyway), and when this object is garbage-collected, `end_all` is
called or its event loop ends.

    sessions = ConversationSessions(open_session)   # async () -> a started, lasting HostSession
    async with sessions.stream(PROVIDER_NAME, model, context, signal) as events:
        async for event in events: ...
"""

from __future__ import annotations

import asyncio
import functools
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio

from hostlink.claude_code import prewarm
from hostlink.host import CancelSignal, Context, Done, Message, ModelSpec, StreamEvent, TextContent, ToolCall
from hostlink.host.session import HostSession

# How long an abandoned request may take to stop its claude and shut its session down.
CLEANUP_SECONDS = 15.0


@dataclass(eq=False)
class _Parked:
    messages: tuple[Message, ...]
    host: HostSession
    loop: asyncio.AbstractEventLoop
    owner: asyncio.Task[Any] | None = None  # the task that ran the round (the agent run's)
    expiry: asyncio.Task[None] | None = None
    taken: bool = False

    def end(self, _: object = None) -> None:
        """Shut the session down now (its expiry does it), unless a request took it."""
        if self.expiry is not None:
            self.expiry.cancel()


class ConversationSessions:
    """Host sessions that follow conversations across their rounds (see the module docstring).

    `open_session()` returns a started host session with the Claude Code extension, lasting
    (so its provider prewarms); `stream` runs one request on the session of the conversation
    the request continues, or on a new one.
    """

    def __init__(self, open_session: Callable[[], Awaitable[HostSession]], *, follow_task: bool = True) -> None:
        self._open_session = open_session
        self._follow_task = follow_task
        self._parked: list[_Parked] = []
        weakref.finalize(self, _abandon, self._parked)

    @asynccontextmanager
    async def stream(self, provider: str, model: ModelSpec, context: Context,
                     signal: CancelSignal) -> AsyncGenerator[AsyncIterator[StreamEvent]]:
        """The provider's events for one request. Leaving the block normally after a `Done`
        that asks for tools parks the session; anything else (an error, a cancelled task,
        an answer) cancels the request and shuts the session down, shielded and bounded."""
        host = self._take(context.messages) or await self._open_session()
        finished: list[Done] = []

        async def events() -> AsyncGenerator[StreamEvent]:
            async for event in host.stream(provider, model, context, signal):
                if isinstance(event, Done):
                    finished.append(event)
                yield event

        stream = events()
        completed = False
        try:
            yield stream
            completed = True
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(CLEANUP_SECONDS):
                follows = completed and bool(finished) and _asks_for_tools(finished[-1], context)
                if not follows:
                    signal.cancel("the request was abandoned")
                async for _ in stream:  # the provider ends with its own cleanup done
                    pass
                if follows and not signal.cancelled:
                    self._park(tuple(context.messages), host)
                else:
                    await host.shutdown()

    def _take(self, messages: Sequence[Message]) -> HostSession | None:
        loop = asyncio.get_running_loop()
        for parked in self._parked:
            if parked.loop is loop and prewarm.continues(messages, parked.messages):
                self._parked.remove(parked)
                parked.taken = True
                if parked.owner is not None:
                    parked.owner.remove_done_callback(parked.end)
                parked.end()
                return parked.host
        return None

    def _park(self, messages: tuple[Message, ...], host: HostSession) -> None:
        parked = _Parked(messages, host, asyncio.get_running_loop(), _run_task() if self._follow_task else None)
        self._parked.append(parked)
        parked.expiry = parked.loop.create_task(_expire(parked, self._parked))
        if parked.owner is not None:  # a run that ends (cancelled, failed) takes its session with it
            parked.owner.add_done_callback(parked.end)

    def end_all(self) -> None:
        """End every parked session now (each on its own loop), rather than at its idle bound."""
        _abandon(self._parked)

    def ender(self) -> Callable[[], Awaitable[None]]:
        """What shuts the sessions parked on the running loop down and waits for it, for a
        loop about to end; it holds no reference to this object (a finalizer may call it)."""
        return functools.partial(_end_here, self._parked)


def _run_task() -> asyncio.Task[Any] | None:
    """The task whose end ends the conversation: the one that spawned this request's task when
    a task group did (pydantic-ai's graph runs each step in a task of its own), else this one."""
    parent = anyio.get_current_task().parent_id
    return next((task for task in asyncio.all_tasks() if id(task) == parent), asyncio.current_task())


def _asks_for_tools(done: Done, context: Context) -> bool:
    """The host runs tools and asks again, unless the only call is the answer tool."""
    names = {part.name for part in done.message.content if isinstance(part, ToolCall)}
    cut = context.settings.cut_in(part.text for part in done.message.content if isinstance(part, TextContent))
    return done.message.stop_reason == "toolUse" and names != {context.settings.answer_tool} and not cut


async def _expire(parked: _Parked, shelf: list[_Parked]) -> None:
    """Shut a parked session down after the idle bound, or when cancelled (this object
    collected, the loop ending) unless a request took it."""
    try:
        await anyio.sleep(prewarm.IDLE_SECONDS)
    finally:
        if not parked.taken:
            if parked in shelf:
                shelf.remove(parked)
            with anyio.CancelScope(shield=True), anyio.move_on_after(CLEANUP_SECONDS):
                await parked.host.shutdown()


async def _end_here(shelf: list[_Parked]) -> None:
    loop = asyncio.get_running_loop()
    expiries = [parked.expiry for parked in shelf if parked.loop is loop and parked.expiry is not None]
    for expiry in expiries:
        expiry.cancel()  # its end: the session is shut down unless a request took it
    await asyncio.gather(*expiries, return_exceptions=True)


def _abandon(shelf: list[_Parked]) -> None:
    """At garbage collection: end every parked session now rather than at its idle bound."""
    for parked in list(shelf):
        if not parked.loop.is_closed():
            parked.loop.call_soon_threadsafe(parked.end)
