"""Hostile task answers (tests/fakes/mcp_task_server.py, over real stdio through the real SDK):
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
from hostlink.mcp.runtime.tasks import MAX_IN_FLIGHT, MAX_POLL, MESSAGE_CHARS
from mcp_runtime_support import text

pytestmark = pytest.mark.anyio
SERVER = str(Path(__file__).parents[1] / "fakes" / "mcp_task_server.py")


def runtime(mode: str, counts: Path | None = None, **fields) -> McpRuntime:
    entry = {"command": sys.executable, "args": [SERVER, mode, *([str(counts)] if counts else [])],
             "protocolVersion": "2026-07-28", "tasks": True, **fields}
    return McpRuntime({"fx": parse_server(entry)})


async def call(mode: str, counts: Path | None = None, **fields):
    running = runtime(mode, counts, **fields)
    try:
        return await running.call_tool("fx", "job", {})
    finally:
        await running.aclose()


async def test_a_task_is_followed_to_its_result_showing_its_status():
    seen = []
    with watching(CallWatch(listener=lambda _p, _t, message: seen.append(message))):
        result = await call("ok")
    assert text(result) == "done" and not result.is_error
    assert seen == ["halfway"]


@pytest.mark.parametrize(("mode", "message"), [
    ("unknown-status", "MCP server 'fx' reported task 'task-1' in a status MCP does not define ('paused')"),
    ("ttl-zero", "MCP server 'fx' gave task 'task-1' a ttlMs of 0: it would keep no result to collect"),
    ("other-id", "MCP server 'fx' answered for task 'task-1' with another task, 'task-other'"),
])
async def test_a_task_answer_hostlink_cannot_follow_is_a_clear_error(mode, message):
    with pytest.raises(CallFailed) as failed:
        await call(mode)
    assert str(failed.value) == message


async def test_a_huge_escape_laden_status_message_is_shown_bounded_and_plain():
    seen = []
    with watching(CallWatch(listener=lambda _p, _t, message: seen.append(message))):
        assert text(await call("loud-message")) == "done"
    (message,) = seen
    assert len(message) == MESSAGE_CHARS and "\x1b" not in message and "\x07" not in message
    assert message.startswith("]0;owned") or message.startswith("x")


async def test_a_poll_interval_of_zero_does_not_spin_and_one_of_a_day_does_not_stall(tmp_path):
    counts = tmp_path / "counts.json"
    assert text(await call("poll-zero", counts)) == "done"
    assert json.loads(counts.read_text())["get"] == 4  # polled at hostlink's floor, not in a loop
    started = time.monotonic()
    assert text(await call("poll-day", counts, toolTimeoutMs=60000)) == "done"
    assert time.monotonic() - started < 3 * MAX_POLL + 5  # at most MAX_POLL between polls, not a day


async def test_a_tasks_get_that_never_answers_times_out_by_the_request_bound():
    with pytest.raises(RequestTimedOut, match=r"^MCP server 'fx' did not answer tasks/get for task 'task-1' "
                                              r"within 1000 ms \(its requestTimeoutMs\)$"):
        await call("get-hangs", requestTimeoutMs=1000, toolTimeoutMs=30000)


async def test_a_server_that_dies_mid_task_is_a_connection_error():
    with pytest.raises(ConnectFailed, match="MCP server 'fx' closed the connection during the call of tool 'job'"):
        await call("dies")


async def test_an_uncollected_task_is_cancelled_when_the_session_ends(tmp_path):
    counts = tmp_path / "counts.json"
    running = runtime("get-hangs", counts, toolTimeoutMs=200)
    try:
        with watching(CallWatch(detach=True)):
            handle = await running.call_tool("fx", "job", {})
        assert handle.meta["hostlink/task"] == {"server": "fx", "taskId": "task-1", "status": "working"}
    finally:
        await running.aclose()
    assert json.loads(counts.read_text())["cancel"] == 0  # detached: left running on purpose

    running = runtime("forever", counts, toolTimeoutMs=300)
    try:
        handle = await running.call_tool("fx", "job", {})
        assert "still running" in text(handle)
    finally:
        await running.aclose()
    assert json.loads(counts.read_text())["cancel"] == 1


async def test_a_session_holds_a_bounded_number_of_tasks_in_flight(tmp_path):
    counts = tmp_path / "counts.json"
    running = runtime("forever", counts, toolTimeoutMs=100)
    try:
        for n in range(1, MAX_IN_FLIGHT + 1):
            assert (await running.call_tool("fx", "job", {})).meta["hostlink/task"]["taskId"] == f"task-{n}"
        with pytest.raises(CallFailed, match=f"^this session already has {MAX_IN_FLIGHT} tasks in flight, the most "
                                             "it may have; collect or cancel one"):
            await running.call_tool("fx", "job", {})
        assert text(await running.tasks.check("fx", "task-1", 0)).startswith("Task 'task-1' of MCP server 'fx' is "
                                                                              "still running (status working)")
    finally:
        await running.aclose()
    assert json.loads(counts.read_text())["cancel"] == MAX_IN_FLIGHT + 1  # the refused one at once


async def test_input_other_than_a_question_is_refused_and_the_task_cancelled(tmp_path):
    counts = tmp_path / "counts.json"
    entry = {"command": sys.executable, "args": [SERVER, "asks-model", str(counts)], "tasks": True,
             "elicitation": True}
    running = McpRuntime({"fx": parse_server(entry)}, elicitation=lambda _server: _never_asked)
    try:
        with pytest.raises(CallFailed, match=r"^MCP server 'fx' task 'task-1' asks for input other than a question "
                                             r"to the person \(elicitation\); the task was cancelled$"):
            await running.call_tool("fx", "job", {})
    finally:
        await running.aclose()
    assert json.loads(counts.read_text())["cancel"] == 1


async def _never_asked(_context, _params):
    raise AssertionError("a sampling request must not reach the elicitation callback")
