"""A crashed server comes back: in a runtime with automatic restarts (the gateway's), at the
first use after a back-off and at most LIMIT times in a window, each step said; in every other
runtime it stays down until a reconnect. The fixture server over real stdio pipes."""

from __future__ import annotations

import re
import sys

import anyio
import pytest

from hostlink.mcp.errors import ConnectFailed
from hostlink.mcp.runtime import restart
from hostlink.mcp.runtime.clients import McpRuntime
from hostlink.mcp.runtime.restart import Restarts
from mcp_runtime_support import FIXTURE, fixture_children, stdio

pytestmark = pytest.mark.anyio


class Told:
    """A notifier that keeps what the person was told."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []

    def notify(self, message: str, level: str = "info") -> None:
        self.lines.append((level, message))


def text_of(result) -> str:
    return "".join(block.text for block in result.content if block.type == "text")


async def pid_of(runtime: McpRuntime, name: str) -> int:
    return (await runtime.call_tool(name, "pid", {})).structured_content["result"]


async def crash(runtime: McpRuntime) -> str:
    with pytest.raises(ConnectFailed) as crashed:
        await runtime.call_tool("fx", "crash", {})
    return str(crashed.value)


async def test_a_crash_says_the_backoff_a_use_within_it_says_when_and_the_next_one_restarts():
    told = Told()
    runtime = McpRuntime({"fx": stdio()}, restarts=Restarts(told, auto=True))
    try:
        first = await pid_of(runtime, "fx")
        message = await crash(runtime)
        crashed_at = anyio.current_time()
        assert message.startswith("MCP server 'fx' closed the connection during the call of tool 'crash'")
        assert message.endswith("; hostlink restarts it at the first use after a 2 s back-off, in 2.0 s "
                                "(at most 3 restarts in 5 min)")
        assert "use reconnect" not in message and "crashing on purpose" not in message
        with pytest.raises(ConnectFailed) as early:
            await runtime.call_tool("fx", "echo", {"text": "too soon"})
        wait = float(re.search(r"after a 2 s back-off, in (\d\.\d) s", str(early.value))[1])
        assert 0 < wait <= 2.0
        assert early.value.detail is not None and "crashing on purpose" in early.value.detail  # for a person
        assert fixture_children() == []  # nothing restarts within the back-off
        await anyio.sleep(crashed_at + restart.BACKOFF - anyio.current_time() + 0.05)
        assert text_of(await runtime.call_tool("fx", "echo", {"text": "back"})) == "back"
        assert await pid_of(runtime, "fx") != first
        assert told.lines == [("warning", message),
                              ("info", "restarting MCP server 'fx' (restart 1 of at most 3 in 5 min)")]
    finally:
        await runtime.aclose()
    assert fixture_children() == []


async def test_past_the_limit_it_stays_down_says_so_once_and_a_reconnect_clears_it(monkeypatch):
    monkeypatch.setattr(restart, "BACKOFF", 0.2)
    told = Told()
    runtime = McpRuntime({"fx": stdio()}, restarts=Restarts(told, auto=True))
    try:
        pids = {await pid_of(runtime, "fx")}
        for _ in range(restart.LIMIT):
            await crash(runtime)
            await anyio.sleep(0.3)
            pids.add(await pid_of(runtime, "fx"))  # restarted
        assert len(pids) == restart.LIMIT + 1
        await crash(runtime)
        await anyio.sleep(0.3)
        for _ in range(2):
            with pytest.raises(ConnectFailed) as down:
                await runtime.call_tool("fx", "echo", {"text": "x"})
            assert re.search(r"; it stays down: hostlink restarted it 3 times in the last 5 min, the most it "
                             r"does; the first use in \d+ s restarts it, or use reconnect$", str(down.value))
        assert fixture_children() == []
        restarted = [line for level, line in told.lines if line.startswith("restarting")]
        assert restarted == [f"restarting MCP server 'fx' (restart {n} of at most 3 in 5 min)" for n in (1, 2, 3)]
        assert sum("it stays down" in line for _, line in told.lines) == 1  # said once, not at every use
        await runtime.reconnect("fx")  # an explicit reconnect starts the count afresh
        assert text_of(await runtime.call_tool("fx", "echo", {"text": "again"})) == "again"
    finally:
        await runtime.aclose()
    assert fixture_children() == []


async def test_a_restart_whose_setup_fails_is_down_as_from_a_crash(monkeypatch, tmp_path):
    monkeypatch.setattr(restart, "BACKOFF", 0.2)
    broken = tmp_path / "broken"  # while it exists, the server exits before any protocol
    server = stdio(command="/bin/sh", args=["-c", 'test -e "$0" && exit 2; exec "$1" "$2"', str(broken),
                                            sys.executable, FIXTURE])
    runtime = McpRuntime({"fx": server}, restarts=Restarts(Told(), auto=True))
    try:
        await crash(runtime)
        broken.touch()
        await anyio.sleep(0.3)
        with pytest.raises(ConnectFailed) as failed:
            await runtime.call_tool("fx", "echo", {"text": "x"})
        assert "during setup" in str(failed.value) and "hostlink restarts it at the first use" in str(failed.value)
        broken.unlink()
        await anyio.sleep(0.3)
        assert text_of(await runtime.call_tool("fx", "echo", {"text": "up"})) == "up"
    finally:
        await runtime.aclose()


async def test_without_automatic_restarts_a_crash_stays_down_past_the_backoff():
    runtime = McpRuntime({"fx": stdio()})
    try:
        message = await crash(runtime)
        assert message.endswith("; use reconnect to start it again")
        await anyio.sleep(restart.BACKOFF + 0.2)
        with pytest.raises(ConnectFailed) as latched:
            await runtime.call_tool("fx", "echo", {"text": "x"})
        assert str(latched.value) == message and fixture_children() == []
    finally:
        await runtime.aclose()
