"""The wire of MCP tasks in the 2025-11-25 shape: a `tools/call` with `params.task` answered
by a `CreateTaskResult`, `tasks/get` for its state, `tasks/result` for its result,
`tasks/cancel`, and the `notifications/tasks/status` a server may send.

Spoken on a 2025-11-25 connection whose server declares `capabilities.tasks.requests.tools.call`
and only for a tool whose `execution.taskSupport` is "optional" or "required". The SDK has the
shapes (`mcp_types`) but sends none of these requests; they go out through `send_request` here, and
the `tools/call` through the session's raw send (its typed send takes no `CreateTaskResult`).
Each answer becomes the models of `task_wire` (the 2026-07-28 shape) with the server's fields
as they came, so one policy (`tasks`) checks and follows both.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from mcp_types import (
    CallToolRequest,
    CallToolRequestParams,
    CallToolResult,
    CancelTaskRequest,
    CancelTaskRequestParams,
    GetTaskPayloadRequest,
    GetTaskPayloadRequestParams,
    GetTaskRequest,
    GetTaskRequestParams,
    Result,
    TaskMetadata,
)
from pydantic import ConfigDict

from hostlink.mcp.runtime.task_wire import TaskCreated, TaskState

if TYPE_CHECKING:
    from mcp.client.session import ClientSession

LEGACY = "2025-11-25"
TTL_MS = 3_600_000  # how long hostlink asks a server to keep a task's result: an hour
SUPPORTS = ("optional", "required")


class _Raw(Result):
    """Any answer, its fields kept as they came."""

    model_config = ConfigDict(extra="allow")


def speaks_tasks(session: ClientSession) -> bool:
    """The connection speaks 2025-11-25 and its server declares tasks for `tools/call`."""
    caps = session.server_capabilities
    tasks = getattr(caps, "tasks", None)
    requests = getattr(tasks, "requests", None)
    tools = getattr(requests, "tools", None)
    return session.protocol_version == LEGACY and getattr(tools, "call", None) is not None


def task_support(tool: Any) -> str | None:
    """A listed tool's `execution.taskSupport` ("forbidden", "optional", "required"), or None."""
    support = getattr(getattr(tool, "execution", None), "task_support", None)
    return support if isinstance(support, str) else None


def _fields(task: Any) -> dict[str, Any]:
    task = task if isinstance(task, dict) else {}
    return {"task_id": task.get("taskId"), "status": task.get("status"), "status_message": task.get("statusMessage"),
            "ttl_ms": task.get("ttl"), "poll_interval_ms": task.get("pollInterval")}


Send = Callable[..., Awaitable[Any]]


def task_call(session: ClientSession, follow: Callable[[TaskCreated], Awaitable[CallToolResult]]) -> Send:
    """A stand-in for `Client.call_tool` that asks for the call as a task and hands a
    `CreateTaskResult` to `follow`; a server that answers at once is answered as usual."""

    async def send(name: str, arguments: dict[str, Any], *, read_timeout_seconds: float | None = None,
                   progress_callback: Any = None, meta: Any = None) -> CallToolResult:
        request = CallToolRequest(params=CallToolRequestParams(name=name, arguments=arguments,
                                                               task=TaskMetadata(ttl=TTL_MS), meta=meta))
        data = request.model_dump(by_alias=True, mode="json", exclude_none=True)
        options: dict[str, Any] = {"on_progress": progress_callback} if progress_callback is not None else {}
        if read_timeout_seconds is not None:
            options["timeout"] = read_timeout_seconds
        # `send_request` holds a `tools/call` answer to the plain tool result's shape, which a
        # `CreateTaskResult` is not: the request goes out as the SDK's own subscriptions send theirs.
        session._stamp(data, options)  # type: ignore[arg-type]
        raw = await session._dispatcher.send_raw_request(data["method"], data.get("params"), options)  # type: ignore[arg-type]
        if "task" in raw:
            return await follow(TaskCreated(result_type="task", **_fields(raw["task"])))
        result = CallToolResult.model_validate(raw)
        if not result.is_error:
            await session.validate_tool_result(name, result)
        return result

    return send


async def get_task(session: ClientSession, task_id: str, timeout: float) -> TaskState:
    """The task now; a finished one with what `tasks/result` says it ended with."""
    answer = await session.send_request(GetTaskRequest(params=GetTaskRequestParams(task_id=task_id)), _Raw,
                                        request_read_timeout_seconds=timeout)
    state = TaskState(**_fields(answer.model_dump(by_alias=True, mode="json")))
    if state.status in ("completed", "failed") and state.task_id == task_id:
        await _payload(session, state, timeout)
    return state


async def _payload(session: ClientSession, state: TaskState, timeout: float) -> None:
    from mcp import MCPError

    request = GetTaskPayloadRequest(params=GetTaskPayloadRequestParams(task_id=state.task_id))
    try:
        answer = await session.send_request(request, _Raw, request_read_timeout_seconds=timeout)
    except MCPError as exc:
        if state.status == "completed":
            raise
        state.error = {"message": exc.message}  # the error the call failed with
        return
    raw = answer.model_dump(by_alias=True, mode="json", exclude_none=True)
    if state.status == "completed":
        state.result = raw
    elif isinstance(raw.get("content"), list):  # a failed tool call's result: its text is the reason
        texts = [item.get("text") for item in raw["content"] if isinstance(item, dict)]
        state.error = {"message": " ".join(text for text in texts if isinstance(text, str))}


async def attend(session: ClientSession, task_id: str) -> None:
    """Hold a `tasks/result` open for a task that waits for input: a server sends its questions
    (elicitation requests tied to the task) while one is. Bounded by the caller; what became of
    the task is for the next `tasks/get` to say."""
    import math

    from mcp import MCPError

    request = GetTaskPayloadRequest(params=GetTaskPayloadRequestParams(task_id=task_id))
    try:
        await session.send_request(request, _Raw, request_read_timeout_seconds=math.inf)
    except MCPError:
        pass


async def cancel_task(session: ClientSession, task_id: str, timeout: float) -> None:
    await session.send_request(CancelTaskRequest(params=CancelTaskRequestParams(task_id=task_id)), _Raw,
                               request_read_timeout_seconds=timeout)
