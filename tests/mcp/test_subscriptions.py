"""Resource subscriptions of the runtime (`ResourceSubscriptions`, which the gateway relays)
against a handshake-era server over real stdio that records what it receives: an unsubscribe
goes out only for a subscription the live connection holds."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from hostlink.mcp.config.schema import parse_server
from hostlink.mcp.runtime.clients import McpRuntime
from hostlink.mcp.runtime.subscriptions import ResourceSubscriptions

pytestmark = pytest.mark.anyio
RECORDER = Path(__file__).parents[1] / "fakes" / "mcp_recording_server.py"


def sent(log: Path) -> list[str]:
    """The subscription requests the server received, in order."""
    methods = [json.loads(line)["method"] for line in log.read_text().splitlines()]
    return [method for method in methods if method.startswith("resources/")]


async def test_an_unsubscribe_is_sent_only_for_what_the_live_connection_subscribed(tmp_path):
    log = tmp_path / "received.jsonl"
    runtime = McpRuntime({"rec": parse_server({"command": sys.executable, "args": [str(RECORDER), str(log)]})})

    async def ignore(server: str, uri: str) -> None:
        pass

    subscriptions = ResourceSubscriptions(runtime, ignore)
    try:
        await subscriptions.subscribe("rec", "r://old")
        await subscriptions.subscribe("rec", "r://old")  # once per connection
        await subscriptions.unsubscribe("rec", "r://never")  # nothing held: nothing to undo
        await runtime.disconnect("rec")
        await subscriptions.unsubscribe("rec", "r://old")  # not connected: the server has forgotten it
        assert runtime.snapshot("rec").state == "idle"  # and no connection was started to say so
        await subscriptions.subscribe("rec", "r://gone")
        await runtime.disconnect("rec")
        await runtime.connect("rec")
        await subscriptions.unsubscribe("rec", "r://gone")  # made on the connection before this one
        assert sent(log) == ["resources/subscribe", "resources/subscribe"]
        await subscriptions.subscribe("rec", "r://live")
        await subscriptions.unsubscribe("rec", "r://live")
        assert sent(log)[2:] == ["resources/subscribe", "resources/unsubscribe"]
    finally:
        await runtime.aclose()
