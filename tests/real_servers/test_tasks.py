"""MCP tasks against the real FastMCP 4.1 server with fastmcp-tasks (tests/real_servers/
tasks_server.py, in its own pinned .venv-tasks): the issue's repros. A tool that runs only as a
task works with `"tasks": true` and names the setting without it; a call that outlives its
bound answers with a handle in time and its result is collected later through the `mcp` tool
and `hostlink mcp task`; a cancel reaches the server; input is asked through elicitation; a
failed task is the tool's error; a session's uncollected tasks are cancelled at its end, its
detached ones are not, and nothing of hostlink's runs after it.

Each start of the server costs ~1.7 s of CPU: the tests of what hostlink decides (the opt-in, a
cancel, a failed task, the adapter, the gateway's faces) share the module's server over Streamable
HTTP, on tasks of their own; stdio stays where its process matters (a call that outlives its bound,
a task that asks for input, a stdio server's tasks ending with the command that started it)."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from hostlink.host import Answer
from hostlink.host.progress import CallWatch, watching
from hostlink.mcp.config.schema import parse_server
from hostlink.mcp.errors import CallFailed
from hostlink.mcp.extension import McpExtension
from hostlink.mcp.runtime.clients import McpRuntime
from hostlink.mcp.runtime.elicitation import elicitation_for
from mcp_cli_support import configure, hostlink, hostlink_here
from mcp_runtime_support import Host, Notes, text

pytestmark = [pytest.mark.real_servers, pytest.mark.anyio]

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".venv-tasks" / "bin" / "python"
SERVER = str(Path(__file__).parent / "tasks_server.py")
STDIO = {"command": str(PYTHON), "args": [SERVER], "requestTimeoutMs": 60000}


def slow(**fields):
    return parse_server({**STDIO, "tasks": True, **fields})


def over_http(url: str, **fields) -> dict:
    """The config entry of the module's server over HTTP (one process for every connection)."""
    return {"url": url, "requestTimeoutMs": 60000, "tasks": True, **fields}


def shared(url: str, **fields):
    return parse_server(over_http(url, **fields))


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    """The task server over Streamable HTTP on 127.0.0.1 (its tasks outlive a connection)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([str(PYTHON), SERVER, "--http", str(port)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


async def test_a_tool_that_runs_only_as_a_task_needs_the_opt_in_and_names_it(http_url):
    runtime = McpRuntime({"plain": shared(http_url, tasks=False), "slow": shared(http_url),
                          "old": shared(http_url, protocolVersion="legacy")})
    try:
        with pytest.raises(CallFailed, match=r"^MCP server 'old' runs the call of tool 'build' only as a task, which "
                                             r"hostlink runs on protocol 2026-07-28 connections and on 2025-11-25 ones "
                                             r"whose server declares tasks for tools/call \(this one speaks 2025-11-25 "
                                             r"and its server declares no tasks for tools/call\)$"):
            await runtime.call_tool("old", "build", {"target": "app"})
        with pytest.raises(CallFailed, match=r'^MCP server .plain. is not configured for tasks; set "tasks": true'):
            await runtime.tasks.check("plain", "any", 0)
        with pytest.raises(CallFailed) as refused:
            await runtime.call_tool("plain", "build", {"target": "app"})
        assert str(refused.value) == (
            "MCP server 'plain' runs the call of tool 'build' only as a task; set \"tasks\": true in its "
            "configuration to allow it (`hostlink mcp add --tasks`, or edit its entry)")
        built = await runtime.call_tool("slow", "build", {"target": "app"})
        assert text(built) == "built app" and not built.is_error
        assert text(await runtime.call_tool("slow", "quick", {"text": "plain call"})) == "plain call"
    finally:
        await runtime.aclose()


async def test_a_call_that_outlives_its_bound_leaves_a_handle_the_task_action_collects(tmp_path):
    """The issue's 70 s crunch under a 10 s bound, shortened: a 6 s task under a 1 s bound."""
    seen: list[str | None] = []
    extension = McpExtension(servers={"slow": slow(toolTimeoutMs=1000)})
    async with Host(extension, tmp_path) as host:
        await host.run(action="call", server="slow", tool="quick", args={"text": "warm"})  # the server is up
        started = time.monotonic()
        with watching(CallWatch(listener=lambda _p, _t, message: seen.append(message))):
            handed = await host.run(action="call", server="slow", tool="crunch", args={"seconds": 6})
        waited = time.monotonic() - started
        assert waited <= 2.0, waited  # the bound (1 s) and one poll
        assert not handed.is_error
        task = handed.details["task"]
        assert task["server"] == "slow" and task["status"] == "working"
        assert text(handed).startswith(f"The call of tool 'crunch' is still running on MCP server 'slow' as task "
                                       f"{task['taskId']!r} (status working")
        assert "action 'task'" in text(handed) and "action 'cancel'" in text(handed)
        assert any(message and message.startswith("crunching ") for message in seen)  # statusMessage as progress

        early = await host.run(action="task", server="slow", task=task["taskId"])
        assert early.details["task"]["status"] == "working" and "still running" in text(early)
        done = await host.run(action="task", server="slow", task=task["taskId"], wait=15)
        assert text(done) == "crunched for 6 s" and "task" not in done.details


async def test_a_cancel_reaches_the_server_which_reports_the_task_cancelled(tmp_path, http_url):
    async with Host(McpExtension(servers={"slow": shared(http_url, toolTimeoutMs=500)}), tmp_path) as host:
        handed = await host.run(action="call", server="slow", tool="crunch", args={"seconds": 60})
        assert "task" in handed.details, handed
        task_id = handed.details["task"]["taskId"]
        cancelled = await host.run(action="cancel", server="slow", task=task_id)
        assert text(cancelled) == (f"Asked MCP server 'slow' to cancel task {task_id!r}; it reports the task "
                                   "cancelled.")
        after = await host.run(action="task", server="slow", task=task_id)
        assert after.is_error and text(after) == f"task {task_id!r} was cancelled"


async def test_a_failed_task_is_the_tools_error(http_url):
    runtime = McpRuntime({"slow": shared(http_url)})
    try:
        failed = await runtime.call_tool("slow", "fail", {"reason": "disk full"})
        assert failed.is_error and "failed on purpose: disk full" in text(failed)
    finally:
        await runtime.aclose()


async def test_a_task_that_asks_is_answered_through_elicitation_or_cancelled_naming_the_setting():
    asked = []

    async def ask(question):
        asked.append(question.message)
        return Answer(action="accept", content={"name": "Ada"})

    runtime = McpRuntime({"asks": slow(elicitation=True), "mute": slow()}, elicitation=elicitation_for(ask, Notes()))
    try:
        answered = await runtime.call_tool("asks", "ask_name", {})
        assert text(answered) == "hello Ada" and asked == ["Which name?"]
        with pytest.raises(CallFailed, match=r"MCP server 'mute' task '[^']+' asks for input, which needs "
                                             r"\"elicitation\": true in its configuration .*; the task was cancelled"):
            await runtime.call_tool("mute", "ask_name", {})
    finally:
        await runtime.aclose()


async def test_teardown_cancels_what_the_session_left_but_not_what_it_detached(http_url):
    threads, before = threading.active_count(), asyncio.all_tasks()
    first = McpRuntime({"slow": parse_server({"url": http_url, "tasks": True, "toolTimeoutMs": 300})})
    try:
        left = (await first.call_tool("slow", "crunch", {"seconds": 60})).meta["hostlink/task"]["taskId"]
        with watching(CallWatch(detach=True)):
            started = time.monotonic()
            kept = (await first.call_tool("slow", "crunch", {"seconds": 60})).meta["hostlink/task"]["taskId"]
            assert time.monotonic() - started < 1.0  # detached: the handle at once, no wait
    finally:
        await first.aclose()
    await anyio.sleep(0.2)
    assert threading.active_count() <= threads
    assert asyncio.all_tasks() - before == set()  # no poll, reader or watcher of the session runs on

    second = McpRuntime({"slow": parse_server({"url": http_url, "tasks": True})})
    try:
        gone = await second.tasks.check("slow", left, 0)
        assert gone.is_error and text(gone) == f"task {left!r} was cancelled"
        assert (await second.tasks.check("slow", kept, 0)).meta["hostlink/task"]["status"] == "working"
        assert await second.tasks.cancel("slow", kept) == "cancelled"
    finally:
        await second.aclose()


def test_the_cli_detaches_a_call_and_reads_its_task_from_another_process(tmp_path, http_url):
    """Detach and resume are real processes (the task outlives the first); what the command decides
    about a bound and about a stdio server's tasks runs in this process."""
    env = configure(tmp_path, {"slow": {"url": http_url, "tasks": True}, "local": {**STDIO, "tasks": True}})
    detached = hostlink(env, tmp_path, "mcp", "call", "slow", "crunch", '{"seconds": 3}', "--detach")
    assert detached.returncode == 0, detached.stderr
    task_id = detached.stdout.strip()
    assert task_id and f"`hostlink mcp task slow {task_id}`" in detached.stderr

    done = hostlink(env, tmp_path, "mcp", "task", "slow", task_id, "--wait", "20", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["content"] == [{"type": "text", "text": "crunched for 3 s"}]

    waited = hostlink_here(env, tmp_path, "mcp", "call", "slow", "crunch", '{"seconds": 3}', "--timeout", "1")
    assert waited.returncode == 0 and "is still running on MCP server 'slow'" in waited.stdout
    task_id = waited.stderr.split("`hostlink mcp task slow ")[1].split("`")[0]  # handed over: not cancelled
    assert "crunched for 3 s" in hostlink_here(env, tmp_path, "mcp", "task", "slow", task_id, "--wait", "20").stdout

    ended = hostlink_here(env, tmp_path, "mcp", "call", "local", "crunch", '{"seconds": 3}', "--timeout", "1")
    assert "ended with this command: a stdio server's tasks end with its process" in ended.stderr
    stdio = hostlink_here(env, tmp_path, "mcp", "task", "local", "-J" + task_id)  # an id may begin with "-"
    assert stdio.returncode == 2
    assert "runs over stdio: its tasks ended with the process that started them" in stdio.stderr


def builds_then_crunches(messages, info):
    """pydantic-ai's function model: `build`, then a crunch that outlives its bound, then the answer."""
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart

    returns = [part.model_response_str() for message in messages for part in getattr(message, "parts", ())
               if isinstance(part, ToolReturnPart)]
    if not returns:
        return ModelResponse(parts=[ToolCallPart("mcp", {"action": "call", "server": "slow", "tool": "build",
                                                         "args": {"target": "docs"}})])
    if len(returns) == 1:
        return ModelResponse(parts=[ToolCallPart("mcp", {"action": "call", "server": "slow", "tool": "crunch",
                                                         "args": {"seconds": 30}})])
    return ModelResponse(parts=[TextPart(" | ".join(returns))])


async def test_pydantic_ai_gets_tasks_through_the_host_layer(tmp_path, http_url):
    from pydantic_ai import Agent
    from pydantic_ai.models.function import FunctionModel

    from hostlink.adapters.pydantic_ai import HostlinkMcp

    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"slow": over_http(http_url, toolTimeoutMs=1000)}}))
    agent = Agent(FunctionModel(builds_then_crunches), toolsets=[HostlinkMcp(trust_project=True, cwd=tmp_path)])
    async with agent:
        answer = (await agent.run("build the docs, then crunch")).output
    built, handle = answer.split(" | ")
    assert built == "built docs"
    assert handle.startswith("The call of tool 'crunch' is still running on MCP server 'slow' as task ")


async def test_both_faces_of_the_gateway_run_task_tools_and_hand_back_handles(tmp_path, http_url):
    """The proxy face as a real `hostlink mcp serve` process; the tools face in this process
    (test_tasks_gateway.py runs its process)."""
    from gateway_support import gateway_in_process, stdio_gateway

    servers = {"slow": over_http(http_url, toolTimeoutMs=1000)}
    async with stdio_gateway(tmp_path, servers) as client:  # the proxy face: the one mcp tool
        built = await client.call_tool("mcp", {"action": "call", "server": "slow", "tool": "build",
                                               "args": {"target": "site"}})
        assert text(built) == "built site"
        handed = await client.call_tool("mcp", {"action": "call", "server": "slow", "tool": "crunch",
                                                "args": {"seconds": 3}})
        task_id = text(handed).split(" as task ")[1].split("'")[1]
        done = await client.call_tool("mcp", {"action": "task", "server": "slow", "task": task_id, "wait": 15})
        assert text(done) == "crunched for 3 s"
    async with gateway_in_process(tmp_path, servers, "tools") as client:
        built = await client.call_tool("slow__build", {"target": "site"})
        assert text(built) == "built site" and not built.is_error
        handed = await client.call_tool("slow__crunch", {"seconds": 3})  # not its result yet: no schema applies
        assert handed.is_error and "is still running on MCP server 'slow' as task" in text(handed)
        assert text(handed).endswith("Here: call the tool 'slow__task' with this task id.")
        task_id = text(handed).split(" as task ")[1].split("'")[1]
        done = await client.call_tool("slow__task", {"task": task_id, "wait": 15})
        assert text(done) == "crunched for 3 s" and done.structured_content == {"result": "crunched for 3 s"}
        running = text(await client.call_tool("slow__crunch", {"seconds": 30}))
        cancelled = await client.call_tool("slow__task", {"task": running.split(" as task ")[1].split("'")[1],
                                                          "cancel": True})
        assert text(cancelled).endswith("it reports the task cancelled.")
