"""A crashed server comes back behind `hostlink mcp serve`, driven by the SDK's client on the
gateway in this process (the SDK's memory streams) and, with two MCP hosts, on the real command
over loopback HTTP: by itself at the first call after the back-off
(both faces), at most three times in five minutes, and at once by the `mcp` tool's action
reconnect (proxy face)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import anyio
import pytest

from gateway_support import fixture, gateway_in_process, http_gateway, http_host, leftovers, live_mentioning

pytestmark = pytest.mark.anyio
BACKOFF = 2.0  # hostlink.mcp.runtime.restart.BACKOFF, as the docs promise it
NOTE = "hostlink restarts it at the first use after a 2 s back-off, in {} s (at most 3 restarts in 5 min)"


def servers_running(tmp_path: Path) -> list[int]:
    """The fixture servers the test's gateway runs (they inherit its HOME under `tmp_path`)."""
    found = []
    for pid in live_mentioning(str(tmp_path)):
        try:
            if b"mcp_fixture_server" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
        except OSError:
            continue
    return found


def text(result) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


def calls(face: str):
    """The call of one fixture tool in `face`, as the MCP host makes it."""

    def call(client, tool: str, **args):
        if face == "proxy":
            return client.call_tool("mcp", {"action": "call", "server": "fx", "tool": tool, "args": args})
        return client.call_tool(f"fx__{tool}", args)

    return call


@pytest.mark.parametrize("face", ["proxy", "tools"])
async def test_a_call_within_the_backoff_says_so_and_the_one_after_it_works(tmp_path, face):
    call = calls(face)
    errors = tmp_path / "stderr"
    with errors.open("w") as errlog:
        async with gateway_in_process(tmp_path, {"fx": fixture()}, face, errlog=errlog) as client:
            await client.list_tools()
            first = text(await call(client, "pid"))
            crashed = await call(client, "crash")
            crashed_at = time.monotonic()
            assert crashed.is_error and text(crashed).endswith("; " + NOTE.format("2.0"))
            assert "closed the connection during the call of tool 'crash'" in text(crashed)
            early = await call(client, "echo", text="too soon")
            # what remains of the back-off: 2.0 when the call comes within 50 ms of the crash
            assert early.is_error and re.search(re.escape(NOTE).replace(r"\{\}", r"[012]\.\d"), text(early))
            assert "crashing on purpose" not in text(early)  # the server's own words are for the person
            await anyio.sleep(crashed_at + BACKOFF + 0.1 - time.monotonic())
            back = await call(client, "echo", text="back")
            assert not back.is_error and text(back) == "back"
            assert text(await call(client, "pid")) != first
    said = errors.read_text()
    assert "hostlink mcp serve warning: MCP server 'fx' closed the connection" in said
    assert "hostlink mcp serve info: restarting MCP server 'fx' (restart 1 of at most 3 in 5 min)" in said
    assert live_mentioning(str(tmp_path)) == [] and leftovers(tmp_path) == []


async def test_the_reconnect_action_brings_a_crashed_server_back_at_once(tmp_path):
    async with gateway_in_process(tmp_path, {"fx": fixture()}) as client:
        (mcp,) = (await client.list_tools()).tools
        assert "reconnect" in mcp.input_schema["properties"]["action"]["enum"]
        assert "reconnect (`server`)" in (mcp.description or "")
        crashed = await calls("proxy")(client, "crash")
        assert crashed.is_error
        reset = await client.call_tool("mcp", {"action": "reconnect", "server": "fx"})
        assert not reset.is_error and text(reset) == "fx: reset to idle; the next use connects"
        back = await calls("proxy")(client, "echo", text="back")  # no back-off after an explicit reconnect
        assert not back.is_error and text(back) == "back"
        ghost = await client.call_tool("mcp", {"action": "reconnect", "server": "ghost"})
        assert ghost.is_error and "unknown MCP server 'ghost'" in text(ghost)
    assert live_mentioning(str(tmp_path)) == [] and leftovers(tmp_path) == []


async def test_after_three_restarts_in_the_window_it_stays_down_and_says_so(tmp_path):
    call = calls("tools")
    errors = tmp_path / "stderr"
    with errors.open("w") as errlog:
        async with gateway_in_process(tmp_path, {"fx": fixture()}, "tools", errlog=errlog) as client:
            await client.list_tools()
            for _ in range(4):  # the first crash, then each of the three restarts crashes too
                assert (await call(client, "crash")).is_error
                await anyio.sleep(BACKOFF + 0.1)
            for _ in range(2):
                down = await call(client, "echo", text="x")
                assert down.is_error and re.search(
                    r"; it stays down: hostlink restarted it 3 times in the last 5 min, the most it does; "
                    r"the first use in \d+ s restarts it, or use reconnect$", text(down)), text(down)
            assert servers_running(tmp_path) == []
    said = errors.read_text()
    assert [n for n in range(1, 5) if f"(restart {n} of at most 3 in 5 min)" in said] == [1, 2, 3]
    assert said.count("it stays down") == 1
    assert live_mentioning(str(tmp_path)) == [] and leftovers(tmp_path) == []


async def test_over_http_a_crash_in_one_hosts_call_is_said_to_the_other_and_both_get_it_back(tmp_path):
    """Two MCP hosts on one `--http` gateway share its servers: host A's call crashes one, host
    B's call within the back-off hears when it comes back, and after it both hosts' calls work."""
    call = calls("tools")
    with http_gateway(tmp_path, {"fx": fixture()}, "--expose", "tools") as gateway:
        async with http_host(gateway) as first, http_host(gateway) as second:
            await first.list_tools()
            await second.list_tools()
            crashed = await call(first, "crash")
            crashed_at = time.monotonic()
            assert crashed.is_error and "closed the connection during the call of tool 'crash'" in text(crashed)
            early = await call(second, "echo", text="too soon")
            assert early.is_error and re.search(re.escape(NOTE).replace(r"\{\}", r"[012]\.\d"), text(early))
            await anyio.sleep(crashed_at + BACKOFF + 0.1 - time.monotonic())
            for host in (second, first):
                back = await call(host, "echo", text="back")
                assert not back.is_error and text(back) == "back"
    said = gateway.stderr.read_text()
    assert "restarting MCP server 'fx' (restart 1 of at most 3 in 5 min)" in said
