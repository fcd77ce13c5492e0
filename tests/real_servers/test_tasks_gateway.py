"""Tasks passed through the gateway's tools face to an MCP host that declares the tasks
extension (2026-07-28): the SDK's client with hostlink's own `TasksExtension` declared, against
`hostlink mcp serve --expose tools` with the real FastMCP task server upstream
(tests/real_servers/tasks_server.py, in .venv-tasks). The host gets a task of the gateway's,
polls it to its result, cancels one (the upstream reports it cancelled), and another session
cannot read it; a host that declares nothing still gets handles."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import MCPError
from mcp_types import CallToolResult, TextContent

from hostlink.mcp.runtime.task_wire import (
    CancelTask,
    TaskCreated,
    TaskParams,
    TasksExtension,
    TaskState,
    cancel_task,
    get_task,
    update_task,
)
from hostlink.mcp.runtime.task_wire_legacy import cancel_task as cancel_legacy
from hostlink.mcp.runtime.task_wire_legacy import get_task as get_legacy
from hostlink.mcp.runtime.task_wire_legacy import speaks_tasks, task_call
from mcp_runtime_support import text

pytestmark = [pytest.mark.real_servers, pytest.mark.anyio]

ROOT = Path(__file__).resolve().parents[2]
STDIO = {"command": str(ROOT / ".venv-tasks" / "bin" / "python"),
         "args": [str(Path(__file__).parent / "tasks_server.py")], "requestTimeoutMs": 60000}
SERVERS = {"slow": {**STDIO, "tasks": True}}


class Host:
    """A host that declares tasks: a task answer is recorded, and the call answers its id."""

    def __init__(self) -> None:
        self.created: list[TaskCreated] = []

        async def follow(created: TaskCreated, _session: Any, _tool: str) -> CallToolResult:
            self.created.append(created)
            return CallToolResult(content=[TextContent(type="text", text=str(created.task_id))],  # the tools'
                                  structured_content={"result": str(created.task_id)})  # output schema: a result

        async def heard(_params: Any) -> None:
            pass

        self.extension = TasksExtension(follow, heard)


async def poll(session: Any, task_id: str, seconds: float = 20) -> Any:
    with anyio.fail_after(seconds):
        while True:
            state = await get_task(session, task_id, 10)
            if state.status in ("completed", "failed", "cancelled"):
                return state
            await anyio.sleep(0.1)


async def test_a_host_that_declares_tasks_gets_the_gateways_own_tasks(tmp_path):
    from gateway_support import stdio_gateway

    host = Host()
    async with stdio_gateway(tmp_path, SERVERS, "--expose", "tools", extensions=[host.extension]) as client:
        built = await client.call_tool("slow__build", {"target": "site"})
        task_id = text(built)
        assert host.created[-1].status in ("working", "completed") and len(task_id) >= 16
        state = await poll(client.session, task_id)
        assert state.status == "completed" and state.result["content"] == [{"type": "text", "text": "built site"}]
        crunch = text(await client.call_tool("slow__crunch", {"seconds": 0.5}))
        assert crunch != task_id
        state = await poll(client.session, crunch)
        assert state.status == "completed" and state.result["content"][0]["text"] == "crunched for 0.5 s"
        with pytest.raises(MCPError, match="Unknown task"):  # collected: gone from the session's book
            await get_task(client.session, crunch, 10)

        running = text(await client.call_tool("slow__crunch", {"seconds": 30}))
        assert (await get_task(client.session, running, 10)).status == "working"
        other = Host()
        async with stdio_gateway(tmp_path, SERVERS, "--expose", "tools", extensions=[other.extension]) as second:
            with pytest.raises(MCPError, match="Unknown task"):
                await get_task(second.session, running, 10)
            with pytest.raises(MCPError, match="Unknown task"):
                await cancel_task(second.session, running, 10)
        cancelled = await client.session.send_request(CancelTask(params=TaskParams(task_id=running)), TaskState,
                                                      request_read_timeout_seconds=10)
        assert cancelled.task_id == running and cancelled.status == "cancelled"  # what the upstream reports after it
        with pytest.raises(MCPError, match="Unknown task"):  # cancelled upstream: no longer the session's
            await get_task(client.session, running, 10)
        assert text(await client.call_tool("slow__quick", {"text": "plain"})) == "plain"  # no task: as before
        started = [text(await client.call_tool("slow__crunch", {"seconds": 30})) for _ in range(8)]
        refused = await client.call_tool("slow__crunch", {"seconds": 30})  # unmarked: the server made it a task
        assert refused.is_error and "already has 8 tasks in flight" in text(refused)
        assert "was cancelled" in text(refused)
        assert text(await client.call_tool("slow__quick", {"text": "still"})) == "still"  # no task: it runs
        for task_id in started:  # what the session leaves would be cancelled at its end; here it cancels them
            await cancel_task(client.session, task_id, 10)
        asking = text(await client.call_tool("slow__ask_name", {}))
        with pytest.raises(MCPError, match='asks for input, which needs "elicitation": true'):
            await poll(client.session, asking)
        assert (await get_task(client.session, asking, 10)).status == "cancelled"


async def test_a_host_that_declares_elicitation_answers_a_tasks_input_itself(tmp_path):
    """The task's input request is handed to the host in its tasks/get (the server has no
    "elicitation": true, so the gateway would otherwise cancel it), and the host's tasks/update
    reaches the server, whose task ends with the answer."""
    from gateway_support import stdio_gateway

    async def never(*_args: Any) -> Any:
        raise AssertionError("the gateway asked through elicitation instead of handing the question on")

    host = Host()
    async with stdio_gateway(tmp_path, SERVERS, "--expose", "tools", extensions=[host.extension],
                             elicitation_callback=never) as client:
        asking = text(await client.call_tool("slow__ask_name", {}))
        with anyio.fail_after(20):
            while (state := await get_task(client.session, asking, 10)).status != "input_required":
                await anyio.sleep(0.1)
        [(key, question)] = state.input_requests.items()  # keyed as the server keys it
        assert question["method"] == "elicitation/create" and question["params"]["message"] == "Which name?"
        await update_task(client.session, asking, {key: {"action": "accept", "content": {"name": "Ada"}}}, 10)
        state = await poll(client.session, asking)
        assert state.status == "completed" and state.result["content"][0]["text"] == "hello Ada"


async def test_a_host_that_declares_nothing_still_gets_handles(tmp_path):
    from gateway_support import stdio_gateway

    servers = {"slow": {**STDIO, "tasks": True, "toolTimeoutMs": 500}}
    async with stdio_gateway(tmp_path, servers, "--expose", "tools") as client:
        assert "slow__task" in {tool.name for tool in (await client.list_tools()).tools}
        handed = await client.call_tool("slow__crunch", {"seconds": 3})
        assert handed.is_error and text(handed).endswith("Here: call the tool 'slow__task' with this task id.")


async def test_a_2025_11_25_host_gets_tasks_in_that_shape(tmp_path):
    """A 2025-11-25 host (the SDK's client in legacy mode, asking with hostlink's own wire of
    that shape): the gateway declares `capabilities.tasks`, marks the tools, and a call asked
    as a task answers a `CreateTaskResult`; `tasks/get` and `tasks/result` give the state and
    the result, `tasks/cancel` reaches the upstream, and another session cannot read it."""
    from gateway_support import stdio_gateway

    created: list[TaskCreated] = []

    async def follow(task: TaskCreated) -> CallToolResult:
        created.append(task)
        return CallToolResult(content=[TextContent(type="text", text=str(task.task_id))])

    async def until_ended(session: Any, task_id: str) -> Any:
        with anyio.fail_after(20):
            while (state := await get_legacy(session, task_id, 10)).status not in ("completed", "failed", "cancelled"):
                await anyio.sleep(0.1)
        return state

    async with stdio_gateway(tmp_path, SERVERS, "--expose", "tools", mode="legacy") as client:
        assert client.protocol_version == "2025-11-25" and speaks_tasks(client.session)
        marks = {tool.name: tool.execution.task_support for tool in (await client.list_tools()).tools
                 if tool.execution is not None}
        assert marks["slow__build"] == marks["slow__quick"] == "optional"  # 2026-07-28 upstream: no marks
        as_task = task_call(client.session, follow)
        built = text(await as_task("slow__build", {"target": "site"}))
        assert created[-1].status in ("working", "completed") and len(built) >= 16
        state = await until_ended(client.session, built)
        assert state.status == "completed" and state.result["content"] == [{"type": "text", "text": "built site"}]
        with pytest.raises(MCPError, match="Unknown task"):  # collected by tasks/result
            await get_legacy(client.session, built, 10)

        quick = text(await as_task("slow__quick", {"text": "at \x1b[31monce"}))  # answered at once: an ended task
        assert created[-1].status == "completed"
        state = await until_ended(client.session, quick)
        assert state.result["content"] == [{"type": "text", "text": "at once"}]  # sanitized as any result

        failing = text(await as_task("slow__fail", {"reason": "disk"}))
        state = await until_ended(client.session, failing)
        assert state.status == "completed" and state.result["isError"] is True  # as the server ended it
        assert state.result["content"][0]["text"].endswith("failed on purpose: disk")
        assert "resultType" not in state.result  # a 2026-07-28 field: not on this wire

        running = text(await as_task("slow__crunch", {"seconds": 30}))
        assert (await get_legacy(client.session, running, 10)).status == "working"
        async with stdio_gateway(tmp_path, SERVERS, "--expose", "tools", mode="legacy") as second:
            with pytest.raises(MCPError, match="Unknown task"):
                await get_legacy(second.session, running, 10)
        await cancel_legacy(client.session, running, 10)
        with pytest.raises(MCPError, match="Unknown task"):  # cancelled upstream: no longer the session's
            await get_legacy(client.session, running, 10)
        plain = await client.call_tool("slow__crunch", {"seconds": 0.2})  # not asked as a task: as before
        assert text(plain) == "crunched for 0.2 s"
