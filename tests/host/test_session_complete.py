"""A model answer asked of the host session (what MCP sampling uses) from a provider that cannot
run: one error event carrying the provider's own advice, and no request made."""

from __future__ import annotations

import pytest

from hostlink.host import CancelSignal, Context, ErrorEvent, ModelSpec, ProviderSpec
from hostlink.host.session import HostSession

pytestmark = pytest.mark.anyio


class UnavailableProvider:
    def __init__(self) -> None:
        self.requests = 0

    def register(self, registry) -> None:
        registry.register_provider(ProviderSpec("claude-code", [ModelSpec("sonnet", "Sonnet")], self.stream,
                                                unavailable="the claude CLI is not installed: install it first"))

    async def stream(self, model, context, signal):
        self.requests += 1
        yield ErrorEvent("never reached")


async def test_an_unavailable_provider_answers_with_its_advice():
    provider = UnavailableProvider()
    events = [event async for event in HostSession([provider]).complete(
        "claude-code/sonnet", Context(system_prompt="", messages=[]), CancelSignal())]
    assert [(event.message, event.code) for event in events] == [
        ("the claude CLI is not installed: install it first", "unavailable")]
    assert provider.requests == 0
