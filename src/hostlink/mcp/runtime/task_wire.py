"""The wire of the MCP tasks extension (`io.modelcontextprotocol/tasks`, 2026-07-28): its
result shapes, its three requests, and the `ClientExtension` that declares it, claims a
`tools/call` answered with `resultType: "task"` and hears `notifications/tasks/status` (which the
2025-11-25 shape, `task_wire_legacy`, may send too).

Only facts of the protocol live here; what hostlink does with a task (how long it waits, what
the model sees, what is refused) is `tasks`. The models take the server's fields as they come
(`Any`): a wrong status, id or interval is the policy's clear error, not a validation trace.
Loaded only for a server with `"tasks": true`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

import mcp  # noqa: F401 - the package before its submodules, which import each other in its order
from mcp.client.extension import ClaimContext, ClientExtension, NotificationBinding, ResultClaim
from mcp_types import CallToolResult, Request, RequestParams, Result
from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from mcp.client.session import ClientSession

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
MODERN = frozenset({"2026-07-28"})


class _TaskFields(Result):
    model_config = ConfigDict(extra="ignore")

    task_id: Any = None
    status: Any = None
    status_message: Any = None
    ttl_ms: Any = None
    poll_interval_ms: Any = None


class TaskCreated(_TaskFields):
    """A `tools/call` the server runs as a task: the task as it started."""

    result_type: Literal["task"] = Field(alias="resultType")


class TaskState(_TaskFields):
    """A `tasks/get` answer: the task now, with its `result`, `error` or `inputRequests`."""

    result: Any = None
    error: Any = None
    input_requests: Any = None


class TaskParams(RequestParams):
    task_id: str


class UpdateParams(TaskParams):
    input_responses: dict[str, Any]


class GetTask(Request[TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskParams
    name_param = "taskId"  # the SDK mirrors it into the Mcp-Name header


class UpdateTask(Request[UpdateParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: UpdateParams
    name_param = "taskId"


class CancelTask(Request[TaskParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskParams
    name_param = "taskId"


async def get_task(session: ClientSession, task_id: str, timeout: float) -> TaskState:
    return await session.send_request(GetTask(params=TaskParams(task_id=task_id)), TaskState,
                                      request_read_timeout_seconds=timeout)


async def update_task(session: ClientSession, task_id: str, responses: dict[str, Any], timeout: float) -> None:
    await session.send_request(UpdateTask(params=UpdateParams(task_id=task_id, input_responses=responses)),
                               Result, request_read_timeout_seconds=timeout)


async def cancel_task(session: ClientSession, task_id: str, timeout: float) -> None:
    await session.send_request(CancelTask(params=TaskParams(task_id=task_id)), Result,
                               request_read_timeout_seconds=timeout)


def elicit_params(payload: Any) -> Any:
    """An input request's elicitation params; ValueError for anything else."""
    from mcp_types import ElicitRequest
    from pydantic import ValidationError

    try:
        return ElicitRequest.model_validate(payload).params
    except ValidationError:
        raise ValueError("not an elicitation request") from None


def call_result(value: Any) -> CallToolResult:
    """A completed task's inlined result; ValueError when it is not a tool result."""
    from pydantic import ValidationError

    try:
        return CallToolResult.model_validate(value)
    except ValidationError:
        raise ValueError("not a tool result") from None


Follow = Callable[[TaskCreated, "ClientSession", str], Awaitable[CallToolResult]]


class StatusParams(BaseModel):
    """A `notifications/tasks/status`: the task's fields, none of them trusted."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    task_id: Any = Field(None, alias="taskId")
    status: Any = None
    status_message: Any = Field(None, alias="statusMessage")


class TasksExtension(ClientExtension):
    """Declares the tasks extension in every request's client capabilities, hands a task
    answer to `follow(created, session, tool)`, which returns the call's result, and a status
    notification to `heard(params)`."""

    identifier = TASKS_EXTENSION

    def __init__(self, follow: Follow, heard: Callable[[StatusParams], Awaitable[None]]) -> None:
        self._follow, self._heard = follow, heard

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return (ResultClaim(result_type="task", model=TaskCreated, resolve=self._resolve, protocol_versions=MODERN),)

    def notifications(self) -> Sequence[NotificationBinding[Any]]:
        return (NotificationBinding(method="notifications/tasks/status", params_type=StatusParams,
                                    handler=self._heard),)

    async def _resolve(self, created: TaskCreated, context: ClaimContext) -> CallToolResult:
        return await self._follow(created, context.session, context.tool_name)
