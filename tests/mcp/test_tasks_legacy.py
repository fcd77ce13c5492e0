"""Tasks in the 2025-11-25 shape (tests/fakes/mcp_task_server_legacy.py, over real stdio through
the real SDK): the same handles, bounds and errors as the 2026-07-28 extension, and hostile
answers each a clear, bounded error (those both shapes share: test_tasks_hostile.py); no poll
outlives its session."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import anyio
import pytest

from hostlink.host.progress import CallWatch, watching
from hostlink.mcp.config.schema import parse_server
from hostlink.mcp.errors import CallFailed, UnknownTool
from hostlink.mcp.extension import McpExtension
from hostlink.mcp.runtime.clients import McpRuntime
from hostlink.mcp.runtime.tasks import MESSAGE_CHARS
from hostlink.mcp.tool import _advertised
from mcp_runtime_support import Host, text

pytestmark = pytest.mark.anyio
SERVER = str(Path(__file__).parents[1] / "fakes" / "mcp_task_server_legacy.py")


def entry(mode: str, counts: Path | None = None, **fields) -> dict:
    return {"command": sys.executable, "args": [SERVER, mode, *([str(counts)] if counts else [])],
            "protocolVersion": "legacy", "tasks": True, **fields}


def runtime(mode: str, counts: Path | None = None, **fields) -> McpRuntime:
    return McpRuntime({"fx": parse_server(entry(mode, counts, **fields))})


async def call(mode: str, counts: Path | None = None, tool: str = "job", **fields):
    running = runtime(mode, counts, **fields)
    try:
        return await running.call_tool("fx", tool, {})
    finally:
        await running.aclose()


async def test_a_required_task_tool_runs_to_its_result_with_its_status_as_progress(tmp_path):
    counts, seen = tmp_path / "counts.json", []
    with watching(CallWatch(listener=lambda _p, _t, message: seen.append(message))):
        result = await call("ok", counts)
    assert text(result) == "done" and not result.is_error
    assert "halfway" in seen and "notified" in seen  # polled and notified status, each shown once
    assert len(seen) == len(set(seen))
    assert json.loads(counts.read_text()) == {"get": 2, "result": 1, "cancel": 0, "call": 1, "plain": 0}
    assert text(await call("ok", counts, tool="plain")) == "plain plain"  # not a task tool: called as it is
    assert json.loads(counts.read_text())["plain"] == 1


async def test_a_task_tool_stays_hidden_and_names_the_setting_where_it_cannot_run():
    running = McpRuntime({"off": parse_server(entry("ok", tasks=False)), "bare": parse_server(entry("undeclared"))})
    try:
        for name, why in (("off", 'set "tasks": true in its configuration'),
                          ("bare", "this one speaks 2025-11-25 and its server declares no tasks for tools/call")):
            await running.list_tools(name)
            assert running.snapshot(name).task_tools is False
            with pytest.raises(UnknownTool, match=why):
                await _advertised(running, name, "job")
    finally:
        await running.aclose()


async def test_an_optional_task_past_its_bound_leaves_a_handle_the_task_action_collects(tmp_path):
    counts = tmp_path / "counts.json"
    async with Host(McpExtension(servers={"fx": parse_server(entry("ok", counts, toolTimeoutMs=300))}),
                    tmp_path) as host:
        listed = text(await host.run(action="tools", server="fx"))
        assert "tool 'job' (runs as a task: required)" in listed
        assert "tool 'work' (runs as a task: optional)" in listed and "tool 'plain':" in listed
        started = time.monotonic()
        handed = await host.run(action="call", server="fx", tool="work", args={})
        assert time.monotonic() - started < 1.0
        task = handed.details["task"]
        assert task == {"server": "fx", "taskId": "task-1", "status": "working"}
        assert text(handed).startswith("The call of tool 'work' is still running on MCP server 'fx' as task 'task-1'")
        done = await host.run(action="task", server="fx", task="task-1", wait=5)
        assert text(done) == "done" and "task" not in done.details
        assert json.loads(counts.read_text())["cancel"] == 0


async def test_a_cancel_reaches_the_server(tmp_path):
    counts = tmp_path / "counts.json"
    running = runtime("forever", counts, toolTimeoutMs=200)
    try:
        handle = await running.call_tool("fx", "work", {})
        assert handle.meta["hostlink/task"]["taskId"] == "task-1"
        assert await running.tasks.cancel("fx", "task-1") == "cancelled"
        assert json.loads(counts.read_text())["cancel"] == 1
        after = await running.tasks.check("fx", "task-1", 0)
        assert after.is_error and text(after) == "task 'task-1' was cancelled"
    finally:
        await running.aclose()
    assert json.loads(counts.read_text())["cancel"] == 1  # collected: nothing left to cancel at the end


async def test_a_failed_task_is_the_tools_error_with_the_reason_tasks_result_gives():
    failed = await call("fails")
    assert failed.is_error and text(failed) == "task 'task-1' failed: disk full"


async def test_a_task_that_waits_for_input_without_elicitation_is_cancelled_naming_the_setting(tmp_path):
    counts = tmp_path / "counts.json"
    with pytest.raises(CallFailed, match=r"^MCP server 'fx' task 'task-1' asks for input, which needs "
                                         r"\"elicitation\": true in its configuration .*; the task was cancelled$"):
        await call("asks", counts)
    assert json.loads(counts.read_text())["cancel"] == 1


async def test_hostile_status_notifications_are_shown_bounded_or_ignored():
    seen = []
    with watching(CallWatch(listener=lambda _p, _t, message: seen.append(message))):
        assert text(await call("loud-notice")) == "done"
    loud = [message for message in seen if "y" * 50 in message]
    assert len(loud) == 1 and len(loud[0]) == MESSAGE_CHARS and "\x1b" not in loud[0] and "\x07" not in loud[0]
    assert "not yours" not in seen  # another task's news is not this call's progress


async def test_no_poll_outlives_the_session_and_what_it_left_is_cancelled(tmp_path):
    counts, before = tmp_path / "counts.json", asyncio.all_tasks()
    running = runtime("forever", counts, toolTimeoutMs=200)
    try:
        assert "still running" in text(await running.call_tool("fx", "job", {}))
    finally:
        await running.aclose()
    await anyio.sleep(0.2)
    assert asyncio.all_tasks() - before == set()
    polled = json.loads(counts.read_text())
    assert polled["cancel"] == 1
    await anyio.sleep(0.3)
    assert json.loads(counts.read_text()) == polled  # nothing polls after the end


async def test_the_gateways_tools_face_offers_and_follows_2025_11_25_tasks(tmp_path):
    from gateway_support import stdio_gateway

    async with stdio_gateway(tmp_path, {"fx": entry("ok", toolTimeoutMs=300)}, "--expose", "tools") as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {"fx__job", "fx__work", "fx__plain", "fx__task"} <= names  # the required tool too: tasks are on
        assert text(await client.call_tool("fx__job", {})) == "done"
        handed = await client.call_tool("fx__work", {})
        assert handed.is_error and "is still running on MCP server 'fx' as task 'task-2'" in text(handed)
        done = await client.call_tool("fx__task", {"task": "task-2", "wait": 5})
        assert text(done) == "done" and not done.is_error


async def test_a_task_call_the_server_answers_at_once_is_that_answer(tmp_path):
    counts = tmp_path / "counts.json"
    assert text(await call("at-once", counts)) == "done"
    refused = await call("at-once", counts, tool="work")
    assert refused.is_error and text(refused) == "disk full"
    assert json.loads(counts.read_text())["get"] == 0  # no task: nothing to poll


@pytest.mark.parametrize(("mode", "reason"), [("fails-refused", "no result kept"), ("fails-bare", "it broke")])
async def test_a_failed_tasks_reason_is_the_error_tasks_result_gives_else_its_status_message(mode, reason):
    failed = await call(mode)
    assert failed.is_error and text(failed) == f"task 'task-1' failed: {reason}"


@pytest.mark.parametrize(("mode", "message"), [
    ("result-refused", "MCP server 'fx' rejected the call of tool 'job': no result kept"),
    ("bad-result", "MCP server 'fx' completed task 'task-1' with a result that is not a tool result"),
])
async def test_a_completed_task_whose_result_cannot_be_had_is_a_clear_error(mode, message):
    with pytest.raises(CallFailed) as failed:
        await call(mode)
    assert str(failed.value) == message


async def test_a_task_the_server_refuses_to_cancel_ends_neither_the_call_nor_the_session_badly(tmp_path):
    counts = tmp_path / "counts.json"
    with pytest.raises(CallFailed, match="asks for input, which needs \"elicitation\": true"):
        await call("asks-stuck", counts)
    assert json.loads(counts.read_text())["cancel"] == 1
    running = runtime("stuck", counts, toolTimeoutMs=200)
    try:
        assert "still running" in text(await running.call_tool("fx", "work", {}))
    finally:
        await running.aclose()  # its cancel at the end is refused: the session still ends
    assert json.loads(counts.read_text())["cancel"] == 1 and running.snapshot("fx").state == "closed"
