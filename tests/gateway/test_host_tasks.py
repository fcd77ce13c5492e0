"""The book of tasks passed through to MCP hosts (gateway.tasks), with a stand-in for the
runtime's tasks: who declares them, per-session ids, the bound, and the teardown."""

from __future__ import annotations

import json
import sys
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest
from mcp import MCPError
from mcp_types import CallToolResult, TextContent

from hostlink.gateway.tasks import TASKS_EXTENSION, HostTasks, declares_tasks
from hostlink.mcp import McpError
from hostlink.mcp.runtime.tasks import MAX_IN_FLIGHT, Status

pytestmark = pytest.mark.anyio


class Connection(SimpleNamespace):
    """A connection is itself (2025-11-25 keys a session's tasks by its connection)."""

    __hash__ = object.__hash__


def request(stream: object | None, *, declared: bool = True, version: str = "2026-07-28") -> Any:
    capabilities = SimpleNamespace(extensions={TASKS_EXTENSION: {}} if declared else None)
    connection = Connection(outbound=stream, has_standalone_channel=stream is not None,
                            client_capabilities=capabilities, exit_stack=AsyncExitStack())
    return SimpleNamespace(protocol_version=version, session=SimpleNamespace(_connection=connection))


class Upstream:
    def __init__(self) -> None:
        self.status: dict[str, str] = {}
        self.cancelled: list[str] = []
        self.ends_after: dict[str, int] = {}  # task -> the poll at which it has completed
        self.cancel_answer: str | McpError = "cancelled"

    async def status_of(self, server: str, task_id: str, *, forward: bool = False) -> Status:
        if task_id in self.ends_after:
            self.ends_after[task_id] -= 1
            if not self.ends_after[task_id]:
                self.status[task_id] = "completed"
        status = self.status.get(task_id, "working")
        if status == "completed":
            done = TextContent(type="text", text=f"done \x1b[31m{task_id}")
            return Status(status, None, CallToolResult(content=[done]))
        if status == "failed":
            return Status(status, "it broke", CallToolResult(content=[TextContent(type="text", text="it broke")],
                                                             is_error=True))
        return Status(status, "half way")

    async def cancel(self, server: str, task_id: str) -> str:
        self.cancelled.append(task_id)
        if isinstance(self.cancel_answer, McpError):
            raise self.cancel_answer
        return self.cancel_answer


class Peer:
    @contextmanager
    def serving(self, ctx: Any, server: str | None) -> Any:
        yield


def book() -> tuple[HostTasks, Upstream]:
    upstream = Upstream()
    tasks = SimpleNamespace(status=upstream.status_of, cancel=upstream.cancel)
    return HostTasks(lambda: tasks, Peer(), lambda: None), upstream  # type: ignore[arg-type, return-value]


def test_only_a_2026_host_on_a_lasting_stream_that_declares_tasks_gets_them():
    stream = object()
    assert declares_tasks(request(stream))
    assert not declares_tasks(request(stream, declared=False))
    assert not declares_tasks(request(stream, version="2025-11-25"))
    assert not declares_tasks(request(None))  # Streamable HTTP: no session to hold a task


async def test_a_task_is_its_sessions_alone_and_ends_with_its_result():
    host_tasks, upstream = book()
    one, two = object(), object()
    created = await host_tasks.created(request(one), "slow", {"taskId": "up-1", "status": "working"})
    own = created["taskId"]
    assert created["resultType"] == "task" and created["status"] == "working" and own != "up-1"
    with pytest.raises(MCPError, match="Unknown task"):
        await host_tasks.get(request(two), SimpleNamespace(task_id=own))
    with pytest.raises(MCPError, match="Unknown task"):
        await host_tasks.cancel(request(two), SimpleNamespace(task_id=own))
    assert upstream.cancelled == []
    state = await host_tasks.get(request(one), SimpleNamespace(task_id=own))
    assert state == {"taskId": own, "status": "working", "statusMessage": "half way", "pollIntervalMs": 500}
    upstream.status["up-1"] = "completed"
    state = await host_tasks.get(request(one), SimpleNamespace(task_id=own))
    assert state["status"] == "completed" and state["result"]["content"][0]["text"] == "done up-1"  # sanitized
    with pytest.raises(MCPError, match="Unknown task"):  # collected
        await host_tasks.get(request(one), SimpleNamespace(task_id=own))
    failing = (await host_tasks.created(request(one), "slow", {"taskId": "up-2", "status": "working"}))["taskId"]
    upstream.status["up-2"] = "failed"
    state = await host_tasks.get(request(one), SimpleNamespace(task_id=failing))
    assert state["error"] == {"code": -32603, "message": "it broke"} and "result" not in state


async def test_a_session_holds_a_bounded_number_and_what_is_left_is_cancelled_at_the_end():
    host_tasks, upstream = book()
    one, two = object(), object()
    for index in range(MAX_IN_FLIGHT):
        await host_tasks.created(request(one), "slow", {"taskId": f"up-{index}", "status": "working"})
    assert host_tasks.refusal(request(one)).is_error and host_tasks.refusal(request(two)) is None
    refused = await host_tasks.created(request(one), "slow", {"taskId": "up-extra", "status": "working"})
    assert refused.is_error and f"already has {MAX_IN_FLIGHT} tasks in flight" in refused.content[0].text
    assert upstream.cancelled == ["up-extra"]
    kept = await host_tasks.created(request(two), "slow", {"taskId": "up-two", "status": "working"})
    cancelled = await host_tasks.cancel(request(two), SimpleNamespace(task_id=kept["taskId"]))
    assert cancelled == {"taskId": kept["taskId"], "status": "cancelled"}
    upstream.cancelled.clear()
    await host_tasks.aclose()
    assert sorted(upstream.cancelled) == sorted(f"up-{index}" for index in range(MAX_IN_FLIGHT))


async def test_a_2025_11_25_result_waits_for_the_end_and_a_cancel_reports_what_the_server_says():
    host_tasks, upstream = book()
    one = request(object(), version="2025-11-25")
    own = (await host_tasks.created(one, "slow", {"taskId": "up-1", "status": "working"}))["task"]["taskId"]
    upstream.ends_after["up-1"] = 2  # still working at the first poll
    result = await host_tasks.result(one, SimpleNamespace(task_id=own))
    assert result["content"][0]["text"] == "done up-1" and upstream.ends_after["up-1"] == 0
    with pytest.raises(MCPError, match="Unknown task"):  # collected
        await host_tasks.get(one, SimpleNamespace(task_id=own))
    kept = (await host_tasks.created(one, "slow", {"taskId": "up-2", "status": "working"}))["task"]["taskId"]
    upstream.cancel_answer = "working"  # the server has not stopped it yet
    assert (await host_tasks.cancel(one, SimpleNamespace(task_id=kept)))["status"] == "working"
    assert (await host_tasks.get(one, SimpleNamespace(task_id=kept)))["status"] == "working"  # still the host's


async def test_a_task_that_ended_at_once_takes_no_input_and_its_cancel_reaches_no_server():
    host_tasks, upstream = book()
    one = request(object())
    ended = CallToolResult(content=[TextContent(type="text", text="at once")])
    own = host_tasks.finished(one, "slow", ended)["taskId"]
    with pytest.raises(MCPError, match=f"task '{own}' asked for no such input"):
        await host_tasks.update(one, SimpleNamespace(task_id=own, input_responses={"q": {}}))
    assert await host_tasks.cancel(one, SimpleNamespace(task_id=own)) == {"taskId": own, "status": "completed"}
    assert upstream.cancelled == []
    with pytest.raises(MCPError, match="Unknown task"):  # collected
        await host_tasks.get(one, SimpleNamespace(task_id=own))


async def test_too_many_input_answers_are_refused_and_a_failing_cancel_at_the_end_is_quiet():
    from hostlink.gateway.tasks import MAX_INPUTS

    host_tasks, upstream = book()
    one = request(object())
    own = (await host_tasks.created(one, "slow", {"taskId": "up-1", "status": "working"}))["taskId"]
    answers = {f"q{index}": {} for index in range(MAX_INPUTS + 1)}
    with pytest.raises(MCPError, match="asked for no such input"):
        await host_tasks.update(one, SimpleNamespace(task_id=own, input_responses=answers))
    upstream.cancel_answer = McpError("the server is gone")
    await host_tasks.aclose()
    assert upstream.cancelled == ["up-1"]


async def test_at_the_bound_only_a_call_marked_as_a_task_is_refused_before_it_is_made(tmp_path):
    """The gateway in this process (the SDK's memory streams), a 2026-07-28 host that declares
    tasks, and the 2025-11-25 fixture upstream (`job` marked "required", `plain` unmarked): with
    the session's tasks at the bound, `job` is refused without reaching the server, and `plain`
    still runs."""
    from gateway_support import gateway_in_process
    from hostlink.mcp.runtime.task_wire import TasksExtension

    async def follow(created: Any, _session: Any, _tool: str) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=str(created.task_id))])

    async def heard(_params: Any) -> None:
        pass

    counts = tmp_path / "counts.json"
    fixture = Path(__file__).parents[1] / "fakes" / "mcp_task_server_legacy.py"
    servers = {"fx": {"command": sys.executable, "args": [str(fixture), "forever", str(counts)],
                      "protocolVersion": "legacy", "tasks": True}}
    async with gateway_in_process(tmp_path, servers, "tools", extensions=[TasksExtension(follow, heard)]) as client:
        started = [(await client.call_tool("fx__job", {})).content[0].text for _ in range(MAX_IN_FLIGHT)]
        assert len(set(started)) == MAX_IN_FLIGHT
        refused = await client.call_tool("fx__job", {})
        assert refused.is_error and f"already has {MAX_IN_FLIGHT} tasks in flight" in refused.content[0].text
        assert json.loads(counts.read_text())["call"] == MAX_IN_FLIGHT  # never reached the server
        plain = await client.call_tool("fx__plain", {})
        assert not plain.is_error and plain.content[0].text == "plain plain"
    assert json.loads(counts.read_text())["cancel"] == MAX_IN_FLIGHT  # what the session left, cancelled at its end


async def test_a_2025_11_25_host_over_http_gets_tasks_its_session_alone_holds(tmp_path):
    """`hostlink mcp serve --http` and 2025-11-25 hosts (SDK clients with hostlink's wire of that
    shape), the fixture upstream working until cancelled: a task asked over one HTTP session is
    that session's alone, and ending the session cancels it upstream; one left at the gateway's
    stop is cancelled then."""
    from gateway_support import http_gateway, http_host
    from hostlink.mcp.runtime.task_wire_legacy import cancel_task, get_task, task_call

    async def follow(created: Any) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=str(created.task_id))])

    def counted() -> dict[str, int]:
        return json.loads(counts.read_text())

    counts = tmp_path / "counts.json"
    fixture = Path(__file__).parents[1] / "fakes" / "mcp_task_server_legacy.py"
    servers = {"fx": {"command": sys.executable, "args": [str(fixture), "forever", str(counts)],
                      "protocolVersion": "legacy", "tasks": True}}
    with http_gateway(tmp_path, servers, "--expose", "tools") as gateway:
        async with http_host(gateway) as host, http_host(gateway) as other:
            running = (await task_call(host.session, follow)("fx__job", {})).content[0].text
            assert (await get_task(host.session, running, 30)).status == "working"
            with pytest.raises(MCPError, match="Unknown task"):
                await get_task(other.session, running, 30)
            with pytest.raises(MCPError, match="Unknown task"):
                await cancel_task(other.session, running, 30)
            left = (await task_call(other.session, follow)("fx__job", {})).content[0].text
            assert left != running and counted()["cancel"] == 0
        with anyio.fail_after(20):  # both sessions ended (the SDK client ends its session on close)
            while counted()["cancel"] < 2:
                await anyio.sleep(0.1)
        async with http_host(gateway) as last:
            await task_call(last.session, follow)("fx__job", {})
    assert counted() == {**counted(), "call": 3, "cancel": 3}  # the last one: at the gateway's stop


@pytest.mark.parametrize(("mode", "handed"), [("asks-loud", True), ("asks-model", False)])
async def test_a_question_is_handed_to_a_host_that_can_answer_it_escaped_and_nothing_else_is(tmp_path, mode, handed):
    """A 2026-07-28 host that declares elicitation gets a task's question, its terminal escapes
    removed; a request that is no question (sampling) is not handed on: it is answered as
    hostlink answers one (here: cancelled with an error naming the setting, the server having no
    "elicitation": true) (tests/fakes/mcp_task_server.py)."""
    from gateway_support import gateway_in_process
    from hostlink.mcp.runtime.task_wire import TasksExtension, get_task

    async def follow(created: Any, _session: Any, _tool: str) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=str(created.task_id))])

    async def heard(_params: Any) -> None:
        pass

    async def never(*_args: Any) -> Any:
        raise AssertionError("the gateway asked through elicitation")

    counts = tmp_path / "counts.json"
    fixture = Path(__file__).parents[1] / "fakes" / "mcp_task_server.py"
    servers = {"fx": {"command": sys.executable, "args": [str(fixture), mode, str(counts)], "tasks": True}}
    async with gateway_in_process(tmp_path, servers, "tools", extensions=[TasksExtension(follow, heard)],
                                  elicitation_callback=never) as client:
        asking = (await client.call_tool("fx__job", {})).content[0].text
        if not handed:
            with pytest.raises(MCPError, match=r"task 'task-1' asks for input.*the task was cancelled"):
                await get_task(client.session, asking, 10)
            assert json.loads(counts.read_text())["cancel"] == 1
            return
        state = await get_task(client.session, asking, 10)
        assert state.status == "input_required"
        assert state.input_requests["q"]["params"]["message"] == "Which name?"


async def test_a_2025_11_25_task_call_with_parameters_of_the_wrong_shape_is_invalid_params(tmp_path):
    """The gateway reads a task call itself (not the SDK's handler path), so it checks the shape itself."""
    from gateway_support import fixture, gateway_in_process

    async with gateway_in_process(tmp_path, {"fx": fixture()}, "tools", mode="legacy") as client:
        with pytest.raises(MCPError) as refused:  # the host's wire for task calls, as hostlink's own (task_wire_legacy)
            await client.session._dispatcher.send_raw_request(
                "tools/call", {"name": ["fx__echo"], "arguments": {}, "task": {"ttl": 1000}}, {})
        echoed = await client.call_tool("fx__echo", {"text": "still served"})
    assert (refused.value.error.code, refused.value.error.message) == (-32602, "Invalid request parameters")
    assert echoed.content[0].text == "still served"
