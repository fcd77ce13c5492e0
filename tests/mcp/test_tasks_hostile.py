"""Hostile task answers in both shapes — the 2026-07-28 extension (tests/fakes/mcp_task_server.py)
and 2025-11-25 (tests/fakes/mcp_task_server_legacy.py), over real stdio through the real SDK:
each is a clear error or stays within hostlink's bounds, and the session ends clean."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from hostlink.host.progress import CallWatch, watching
from hostlink.mcp.config.schema import parse_server
from hostlink.mcp.errors import CallFailed, ConnectFailed, RequestTimedOut
from hostlink.mcp.runtime.clients import McpRuntime
from hostlink.mcp.runtime.tasks import MAX_POLL, MESSAGE_CHARS
from mcp_runtime_support import text

pytestmark = pytest.mark.anyio
FAKES = Path(__file__).parents[1] / "fakes"
SHAPES = {"2026-07-28": (FAKES / "mcp_task_server.py", "2026-07-28"),
          "2025-11-25": (FAKES / "mcp_task_server_legacy.py", "legacy")}


@pytest.fixture(params=list(SHAPES))
def shape(request) -> str:
    return str(request.param)


async def call(shape: str, mode: str, counts: Path | None = None, **fields):
    server, protocol = SHAPES[shape]
    entry = {"command": sys.executable, "args": [str(server), mode, *([str(counts)] if counts else [])],
             "protocolVersion": protocol, "tasks": True, **fields}
    running = McpRuntime({"fx": parse_server(entry)})
    try:
        return await running.call_tool("fx", "job", {})
    finally:
        await running.aclose()


@pytest.mark.parametrize(("mode", "message"), [
    ("unknown-status", "MCP server 'fx' reported task 'task-1' in a status MCP does not define ('paused')"),
    ("ttl-zero", "MCP server 'fx' gave task 'task-1' a ttlMs of 0: it would keep no result to collect"),
    ("other-id", "MCP server 'fx' answered for task 'task-1' with another task, 'task-other'"),
])
async def test_a_task_answer_hostlink_cannot_follow_is_a_clear_error(shape, mode, message):
    with pytest.raises(CallFailed) as failed:
        await call(shape, mode)
    assert str(failed.value) == message


async def test_a_huge_escape_laden_status_message_is_shown_bounded_and_plain(shape):
    seen = []
    with watching(CallWatch(listener=lambda _p, _t, message: seen.append(message))):
        assert text(await call(shape, "loud-message")) == "done"
    loud = [message for message in seen if "x" * 50 in message]
    assert len(loud) == 1 and len(loud[0]) == MESSAGE_CHARS and "\x1b" not in loud[0] and "\x07" not in loud[0]


async def test_a_poll_interval_of_zero_does_not_spin_and_one_of_a_day_does_not_stall(shape, tmp_path):
    counts = tmp_path / "counts.json"
    assert text(await call(shape, "poll-zero", counts)) == "done"
    assert json.loads(counts.read_text())["get"] == 4  # polled at hostlink's floor, not in a loop
    started = time.monotonic()
    assert text(await call(shape, "poll-day", counts, toolTimeoutMs=60000)) == "done"
    assert time.monotonic() - started < 3 * MAX_POLL + 5  # at most MAX_POLL between polls, not a day


async def test_a_tasks_get_that_never_answers_times_out_by_the_request_bound(shape):
    with pytest.raises(RequestTimedOut, match=r"^MCP server 'fx' did not answer tasks/get for task 'task-1' "
                                              r"within 1000 ms \(its requestTimeoutMs\)$"):
        await call(shape, "get-hangs", requestTimeoutMs=1000, toolTimeoutMs=30000)


async def test_a_server_that_dies_mid_task_is_a_connection_error(shape):
    with pytest.raises(ConnectFailed, match="MCP server 'fx' closed the connection during the call of tool 'job'"):
        await call(shape, "dies")
