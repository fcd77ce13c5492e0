"""Resource subscriptions through `hostlink mcp serve --expose tools`, driven by the MCP SDK's
client on the gateway in this process (the SDK's memory streams; over real HTTP for host
connections that end): updates of the real `server-everything` reach the host under the
gateway's URI after `resources/subscribe` and stop after `resources/unsubscribe`; a
server without subscriptions is refused with an error naming it; a 2026-07-28 server is
followed through a `subscriptions/listen` stream; what waits for a host connection that does
not read is bounded, and what was dropped is told."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import anyio.lowlevel
import httpx2
import pytest
from mcp import MCPError

from gateway_support import (
    EVERYTHING,
    HOSTLINK,
    NODE,
    demo,
    everything,
    fixture,
    gateway_env,
    gateway_in_process,
    leftovers,
    live_mentioning,
)
from process_support import started

# The host speaks the handshake era, where resources/subscribe is (the SDK warns it is gone on 2026-07-28).
pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]
UPDATE_WAIT = 10  # seconds: server-everything sends one update at once when its updates are switched on
RECORDER = Path(__file__).parent.parent / "fakes" / "mcp_recording_server.py"
TOGGLE = "everything__toggle-subscriber-updates"  # its updates on, then off, at each call


class Updates:
    """The `notifications/resources/updated` a host hears, by URI."""

    def __init__(self) -> None:
        self.uris: list[str] = []
        self.heard = anyio.Event()

    async def on_message(self, message) -> None:
        if getattr(message, "method", None) == "notifications/resources/updated":
            self.uris.append(str(message.params.uri))
            self.heard.set()

    async def wait_for(self, uri: str) -> None:
        with anyio.fail_after(UPDATE_WAIT):
            while uri not in self.uris:
                await self.heard.wait()
                self.heard = anyio.Event()


@pytest.mark.skipif(not (EVERYTHING.is_file() and NODE), reason="no server-everything")
async def test_updates_arrive_after_subscribe_and_stop_after_unsubscribe(tmp_path):
    updates = Updates()
    async with gateway_in_process(tmp_path, {"everything": everything()}, "tools", mode="legacy",
                                  message_handler=updates.on_message) as client:
        assert client.server_capabilities.resources.subscribe is True
        listed = [str(item.uri) for item in (await client.list_resources()).resources]
        kept, dropped = [uri for uri in listed if uri.startswith("hostlink://everything/demo://resource/static/")][:2]
        await client.session.subscribe_resource(kept)
        await client.session.subscribe_resource(dropped)
        assert updates.uris == []
        await client.call_tool(TOGGLE, {})  # on: one update of each subscribed resource at once
        await updates.wait_for(kept)
        await updates.wait_for(dropped)

        await client.session.unsubscribe_resource(dropped)
        await client.call_tool(TOGGLE, {})  # off, so that no periodic update is in flight
        updates.uris.clear()
        await client.call_tool(TOGGLE, {})  # on again: an update of what is still subscribed
        await updates.wait_for(kept)
        assert dropped not in updates.uris, updates.uris
        await client.call_tool(TOGGLE, {})
    assert leftovers(tmp_path) == []


async def test_a_server_without_subscriptions_is_refused_by_name(tmp_path):
    servers = {"plain": {**demo(), "protocolVersion": "legacy"}}  # demo on the handshake era offers none
    async with gateway_in_process(tmp_path, servers, "tools", mode="legacy") as client:
        with pytest.raises(MCPError) as refused:
            await client.session.subscribe_resource("hostlink://plain/demo://readme")
        assert "MCP server 'plain' does not offer resource subscriptions" in refused.value.error.message
        with pytest.raises(MCPError) as unknown:
            await client.session.subscribe_resource("demo://readme")
        assert "Unknown resource: demo://readme" in unknown.value.error.message
        assert unknown.value.error.code == -32602


async def test_a_2026_server_is_followed_through_a_listen_stream(tmp_path):
    """The fixture on 2026-07-28 offers subscriptions as subscriptions/listen streams only, and
    sends an update of the resource its tool change_tools names."""
    updates = Updates()
    readme, escapes = "hostlink://fx/fixture://readme", "hostlink://fx/fixture://escapes"
    async with gateway_in_process(tmp_path, {"fx": fixture()}, "tools", mode="legacy",
                                  message_handler=updates.on_message) as client:
        await client.session.subscribe_resource(readme)
        await client.session.subscribe_resource(escapes)
        await client.call_tool("fx__change_tools", {"name": "one", "updated": "fixture://escapes"})
        await updates.wait_for(escapes)

        await client.session.unsubscribe_resource(escapes)
        updates.uris.clear()
        await client.call_tool("fx__change_tools", {"name": "two", "updated": "fixture://escapes"})
        await client.call_tool("fx__change_tools", {"name": "three", "updated": "fixture://readme"})
        await updates.wait_for(readme)
        assert updates.uris == [readme]
        assert (await client.read_resource(readme)).contents


async def test_one_unsubscribe_undoes_a_uri_subscribed_twice_and_an_unprintable_update_is_not_passed(tmp_path):
    """Updates of a followed resource and of what is under it reach the host, but not one whose
    URI holds a terminal escape; unsubscribing what was never followed asks the server nothing."""
    log = tmp_path / "received.jsonl"
    recorder = {"command": sys.executable, "args": [str(RECORDER), str(log)], "protocolVersion": "legacy"}
    updates = Updates()
    async with gateway_in_process(tmp_path, {"rec": recorder}, "tools", mode="legacy",
                                  message_handler=updates.on_message) as client:
        await client.session.unsubscribe_resource("hostlink://rec/note://never")
        await client.session.subscribe_resource("hostlink://rec/note://x")
        await client.session.subscribe_resource("hostlink://rec/note://x")
        await client.call_tool("rec__update", {"uris": ["note://x/\x1b[2Jcleared", "note://x/child"]})
        await updates.wait_for("hostlink://rec/note://x/child")
        assert updates.uris == ["hostlink://rec/note://x/child"]
        await client.session.unsubscribe_resource("hostlink://rec/note://x")
        assert _received(log).count("resources/unsubscribe") == 1  # once was enough
        assert _received(log).count("resources/subscribe") == 1


def _received(log) -> list[str]:
    return [json.loads(line)["method"] for line in log.read_text().splitlines()] if log.exists() else []


async def _wait_until(predicate) -> None:
    with anyio.fail_after(UPDATE_WAIT):
        while not predicate():
            await anyio.sleep(0.05)


async def test_a_host_connection_ending_drops_its_subscriptions(tmp_path):
    """Over HTTP (one gateway, many host connections): the upstream subscription is made once,
    and undone only when the last host connection that followed the resource has ended."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    log = tmp_path / "received.jsonl"
    recorder = {"command": sys.executable, "args": [str(RECORDER), str(log)], "protocolVersion": "legacy"}
    with started([HOSTLINK, "mcp", "serve", "--http", "--port", "0", "--expose", "tools"],
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                 env=gateway_env(tmp_path, {"rec": recorder}), cwd=tmp_path) as proc:
        try:
            url = proc.stdout.readline().decode().rsplit(" ", 1)[1].strip()
            key_file = Path(proc.stdout.readline().decode().split("$(cat ", 1)[1].rstrip(")\n"))
            headers = {"Authorization": f"Bearer {key_file.read_text()}"}
            async with httpx2.AsyncClient(headers=headers) as http:
                async with Client(streamable_http_client(url, http_client=http), mode="legacy") as first:
                    await first.session.subscribe_resource("hostlink://rec/note://x")
                    async with Client(streamable_http_client(url, http_client=http), mode="legacy") as second:
                        await second.session.subscribe_resource("hostlink://rec/note://x")
                    await anyio.sleep(0.5)  # the second connection has ended; the first still follows
                    assert _received(log).count("resources/subscribe") == 1
                    assert "resources/unsubscribe" not in _received(log)
                await _wait_until(lambda: "resources/unsubscribe" in _received(log))
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=20) == 128 + signal.SIGTERM
        assert b"Traceback" not in proc.stderr.read()
    assert live_mentioning(str(tmp_path)) == [] and leftovers(tmp_path) == []


class Stalled:
    """A host connection that takes nothing until `reading` is set, and what it was sent."""

    def __init__(self) -> None:
        self.reading = anyio.Event()
        self.stalled = anyio.Event()  # the outbox waits on it
        self.sent: list[tuple[str, dict | None]] = []

    async def notify(self, method: str, params) -> None:
        await self._wait()
        self.sent.append((method, None))

    async def send_resource_updated(self, uri: str, meta: dict | None = None) -> None:
        await self._wait()
        self.sent.append((uri, meta))

    async def _wait(self) -> None:
        self.stalled.set()
        await self.reading.wait()


async def test_a_connection_that_does_not_read_holds_a_bounded_outbox_and_hears_what_was_dropped():
    from hostlink.gateway.hosts import DROPPED, MAX_WAITING_URIS, Outbox
    from mcp_runtime_support import Notes

    connection, notes = Stalled(), Notes()
    outbox = Outbox(connection, notes)
    outbox.updated("r://first")
    await connection.stalled.wait()  # its first update is being sent, and the connection takes nothing
    for index in range(MAX_WAITING_URIS + 3):
        outbox.updated(f"r://{index}")
    assert notes.seen == [("warning", f"an MCP host connection does not read its stream: resource updates beyond "
                                      f"{MAX_WAITING_URIS} waiting are dropped, and counted")]  # told once
    connection.reading.set()
    with anyio.fail_after(10):
        while len(connection.sent) < 1 + MAX_WAITING_URIS:
            await anyio.lowlevel.checkpoint()
    assert connection.sent[:2] == [("r://first", None), ("r://0", {DROPPED: 3})]  # the next one says how many
    assert [uri for uri, _ in connection.sent[1:]] == [f"r://{index}" for index in range(MAX_WAITING_URIS)]

    outbox.updated("r://late")
    outbox.list_changed("tools")
    outbox.close()  # the connection ended with something waiting to be sent
    assert notes.seen[-1] == ("warning", "3 resource updates to an MCP host connection were dropped: it did not "
                                         "read them")
    for _ in range(10):  # the scheduler's turns a sending task would take
        await anyio.lowlevel.checkpoint()
    assert len(connection.sent) == 1 + MAX_WAITING_URIS  # nothing more is sent
