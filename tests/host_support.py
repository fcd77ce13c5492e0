"""Shared by the tests that start a host session themselves (no tests here)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from hostlink.host.session import HostSession


class Notices:
    """A host's notifier that keeps every notice: `seen` holds (message, level) pairs."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def notify(self, message: str, level: str = "info") -> None:
        self.seen.append((message, level))

    @property
    def messages(self) -> list[str]:
        return [message for message, _ in self.seen]


@contextlib.contextmanager
def answering_host(answer: Callable[..., AsyncIterator[Any]], tmp_path_factory: Any) -> Iterator[HostSession]:
    """A started host session whose `claude-code` provider streams `answer`'s events (the serve
    apps' tests), with a runtime directory of its own (no plan report of the user's read); shut
    down at the end."""
    from hostlink.claude_code.models import MODELS
    from hostlink.host import ProviderSpec
    from hostlink.host.session import HostSession

    class Provider:
        def register(self, registry: Any) -> None:
            registry.register_provider(ProviderSpec("claude-code", MODELS, answer))

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOSTLINK_RUNTIME_DIR", str(tmp_path_factory.mktemp("runtime")))
        host = HostSession([Provider()])
        asyncio.run(host.start(cwd=tmp_path_factory.mktemp("cwd"), project_trusted=False, notifier=Notices()))
        try:
            yield host
        finally:
            asyncio.run(host.shutdown())


class ScriptedClaudeCode:
    """An extension whose `claude-code` provider (the real models) streams `replies`, one a
    request, in turn: a list of events, or an async generator function of (context, signal).
    For the adapters' tests over the real host session."""

    def __init__(self, replies: list[list[Any]]) -> None:
        self.replies = replies

    def register(self, registry: Any) -> None:
        from hostlink.claude_code.models import MODELS
        from hostlink.host import ProviderSpec

        async def answer(model: Any, context: Any, signal: Any) -> AsyncIterator[Any]:
            reply = self.replies.pop(0)
            async for event in reply(context, signal) if callable(reply) else _listed(reply):
                yield event

        registry.register_provider(ProviderSpec("claude-code", MODELS, answer))


async def _listed(events: list[Any]) -> AsyncIterator[Any]:
    for event in events:
        yield event
