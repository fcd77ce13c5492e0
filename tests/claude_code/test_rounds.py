"""`ConversationSessions`: which host session each round of a conversation runs on, and when
sessions end, with a scripted provider (the real CLI's rounds are in the adapters' tests).

A round answers with a tool call while its history ends with the user's prompt or fewer than
`ROUNDS` tool results, and with text after that."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from host_support import Notices
from hostlink.claude_code import ConversationSessions, prewarm
from hostlink.host import (
    AssistantMessage,
    CancelSignal,
    Context,
    Done,
    ModelSpec,
    ProviderSpec,
    Registry,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from hostlink.host.session import HostSession

pytestmark = pytest.mark.anyio

MODEL = ModelSpec("one", "One")
ROUNDS = 2


class Sessions:
    """Opens numbered host sessions; `served` lists (session, prompt) per request, `ended` the
    sessions shut down."""

    def __init__(self) -> None:
        self.opened = 0
        self.served: list[tuple[int, str]] = []
        self.ended: list[int] = []

    async def open(self) -> HostSession:
        self.opened += 1
        host = HostSession([_Provider(self, self.opened)])
        await host.start(cwd=Path.cwd(), project_trusted=False, notifier=Notices())
        return host


class _Provider:
    def __init__(self, sessions: Sessions, number: int) -> None:
        self.sessions = sessions
        self.number = number

    def register(self, registry: Registry) -> None:
        async def stream(model: ModelSpec, context: Context, signal: CancelSignal) -> AsyncIterator:
            first = context.messages[0]
            assert isinstance(first, UserMessage) and isinstance(first.content[0], TextContent)
            self.sessions.served.append((self.number, first.content[0].text))
            results = sum(isinstance(message, ToolResultMessage) for message in context.messages)
            if results < ROUNDS:
                yield Done(AssistantMessage((ToolCall(f"call-{results}", "echo", {}),), stop_reason="toolUse"))
            else:
                yield Done(AssistantMessage((TextContent("done"),)))

        async def shutdown() -> None:
            self.sessions.ended.append(self.number)

        registry.register_provider(ProviderSpec("scripted", (MODEL,), stream, None))
        registry.on_session_shutdown(shutdown)


async def ask(sessions: ConversationSessions, messages: list) -> AssistantMessage:
    async with sessions.stream("scripted", MODEL, Context("", tuple(messages)), CancelSignal()) as events:
        async for event in events:
            if isinstance(event, Done):
                return event.message
    raise AssertionError("no answer")


def answered(messages: list, answer: AssistantMessage) -> list:
    calls = [part for part in answer.content if isinstance(part, ToolCall)]
    return [*messages, answer, *(ToolResultMessage(call.id, call.name, (TextContent("ok"),)) for call in calls)]


async def test_interleaved_conversations_each_keep_their_own_session():
    opened = Sessions()
    sessions = ConversationSessions(opened.open)
    a = [UserMessage((TextContent("a"),))]
    b = [UserMessage((TextContent("b"),))]
    a = answered(a, await ask(sessions, a))
    b = answered(b, await ask(sessions, b))
    b = answered(b, await ask(sessions, b))
    a = answered(a, await ask(sessions, a))
    assert opened.ended == []  # both wait for their next round
    assert (await ask(sessions, b)).content == (TextContent("done"),)
    assert opened.ended == [2]  # b's answer ended b's session, a's still waits
    assert (await ask(sessions, a)).content == (TextContent("done"),)
    assert opened.served == [(1, "a"), (2, "b"), (2, "b"), (1, "a"), (2, "b"), (1, "a")]
    assert opened.opened == 2 and opened.ended == [2, 1]


async def test_a_history_that_extends_no_waiting_round_gets_a_new_session():
    opened = Sessions()
    sessions = ConversationSessions(opened.open)
    prompt = [UserMessage((TextContent("a"),))]
    await ask(sessions, prompt)
    await ask(sessions, [UserMessage((TextContent("other"),))])  # not a's next round
    assert opened.opened == 2 and [number for number, _ in opened.served] == [1, 2]


async def test_a_request_left_by_an_error_shuts_its_session_down():
    opened = Sessions()
    sessions = ConversationSessions(opened.open)

    async def fail() -> None:
        async with sessions.stream("scripted", MODEL, Context("", (UserMessage((TextContent("a"),)),)),
                                   CancelSignal()) as events:
            async for _ in events:
                raise RuntimeError("the host failed")

    with pytest.raises(RuntimeError):
        await fail()
    assert opened.ended == [1]


async def test_a_waiting_round_ends_with_its_idle_bound_its_task_or_its_owner(monkeypatch):
    monkeypatch.setattr(prewarm, "IDLE_SECONDS", 0.2)
    opened = Sessions()
    sessions = ConversationSessions(opened.open)
    await ask(sessions, [UserMessage((TextContent("a"),))])
    await asyncio.sleep(0.5)
    assert opened.ended == [1]  # the idle bound

    monkeypatch.setattr(prewarm, "IDLE_SECONDS", 60.0)
    await asyncio.create_task(ask(sessions, [UserMessage((TextContent("b"),))]))
    await asyncio.sleep(0.1)
    assert opened.ended == [1, 2]  # the task that ran the conversation ended

    await ask(sessions, [UserMessage((TextContent("c"),))])
    del sessions
    gc.collect()
    await asyncio.sleep(0.1)
    assert opened.ended == [1, 2, 3]  # the object was collected
