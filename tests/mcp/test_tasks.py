"""Tasks of the 2026-07-28 extension (tests/fakes/mcp_task_server.py, over real stdio through the
real SDK): followed to the result, bounded per session, cancelled at the session's end; the
hostile answers both shapes share are in test_tasks_hostile.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from hostlink.host.progress import CallWatch, watching
from hostlink.mcp.config.schema import parse_server
from hostlink.mcp.errors import CallFailed
from hostlink.mcp.runtime.clients import McpRuntime
from hostlink.mcp.runtime.tasks import MAX_IN_FLIGHT
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
    # Each call waits its bound out on a task that never ends, then hands back the task; the bound
    # is one the server's first answer (the task) meets on a loaded machine (100 ms did not, once).
    running = runtime("forever", counts, toolTimeoutMs=1000)
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


@pytest.mark.parametrize(("mode", "refusal"), [
    ("asks-model", r"asks for input other than a question to the person \(elicitation\)"),
    ("asks-many", r"asks for input in a form hostlink does not answer \(1 to 10 requests\)"),
])
async def test_input_hostlink_does_not_answer_is_refused_and_the_task_cancelled(tmp_path, mode, refusal):
    """A request that is no question, or more at once than hostlink answers, never reaches the
    person: the task is cancelled, saying why."""
    counts = tmp_path / "counts.json"
    entry = {"command": sys.executable, "args": [SERVER, mode, str(counts)], "tasks": True, "elicitation": True}
    running = McpRuntime({"fx": parse_server(entry)}, elicitation=lambda _server: _never_asked)
    try:
        with pytest.raises(CallFailed, match=rf"^MCP server 'fx' task 'task-1' {refusal}; the task was cancelled$"):
            await running.call_tool("fx", "job", {})
    finally:
        await running.aclose()
    assert json.loads(counts.read_text())["cancel"] == 1


async def _never_asked(_context, _params):
    raise AssertionError("input hostlink refuses must not reach the elicitation callback")


async def test_questions_are_handed_on_only_within_bounds(tmp_path):
    """A host that answers a task's questions itself (the gateway) gets them bounded and plain;
    too many, or one too long, are not handed on: they are answered as hostlink answers them,
    here by cancelling (no elicitation), naming the setting."""
    counts = tmp_path / "counts.json"
    for mode in ("asks-loud", "asks-many", "asks-long"):
        running = runtime(mode, counts)
        try:
            with watching(CallWatch(detach=True)):
                handle = await running.call_tool("fx", "job", {})
            assert handle.meta["hostlink/task"]["taskId"] == "task-1"
            if mode == "asks-loud":
                status = await running.tasks.status("fx", "task-1", forward=True)
                assert status.status == "input_required" and list(status.asked) == ["q"]
                assert status.asked["q"]["params"]["message"] == "Which name?"
                continue
            with pytest.raises(CallFailed, match=r"^MCP server 'fx' task 'task-1' asks for input, which needs "
                                                 r'"elicitation": true'):
                await running.tasks.status("fx", "task-1", forward=True)
            assert json.loads(counts.read_text())["cancel"] == 1
        finally:
            await running.aclose()


async def test_a_task_id_too_long_to_show_is_refused(tmp_path):
    counts = tmp_path / "counts.json"
    with pytest.raises(CallFailed) as refused:
        await call("long-id", counts)
    assert str(refused.value) == ("MCP server 'fx' answered with a task id hostlink cannot use (not a short, plain "
                                  "text)")
    assert json.loads(counts.read_text())["get"] == 0  # not followed
