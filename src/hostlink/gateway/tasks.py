"""Tasks passed through to an MCP host that declares the tasks extension (the tools face).

A host on protocol 2026-07-28 whose capabilities name `io.modelcontextprotocol/tasks`, on a
stream that lasts (stdio), gets, for a call that a server with `"tasks": true` runs as a task, a
task of the gateway's own: the call is made detached (the runtime answers with the upstream
task's handle at once) and the host is answered `resultType: "task"` with a random id of the
gateway's, mapped to the server and the upstream task id in its session's book alone — another
session that names it hears that no such task exists. The host's `tasks/get` is one upstream
`tasks/get` (the status, its message, and once the task ended its result, sanitized as any tool
result, or its error); `tasks/cancel` cancels the upstream task. A session holds at most
MAX_IN_FLIGHT tasks: while it does, a call of a tool the server's listing marks as a task
(`execution.taskSupport`) is refused before it is made, any other call runs as usual, and should
the server make it a task after all (on 2026-07-28 it decides per call, unmarked), that task is
cancelled and the call answered with the same error. What is left when serving ends is
cancelled upstream. Any other host gets the handles as before.

A host on protocol 2025-11-25 gets the same in that protocol's shape: the gateway declares
`capabilities.tasks` (tools/call, cancel), lists the tools of a server with tasks with
`execution.taskSupport` (the server's own mark, else "optional": it may run any call as a task),
and a `tools/call` with `params.task` answers a `CreateTaskResult`; a call the server answered
at once is a task of the gateway's that has ended. Its `tasks/get` answers the task's state,
`tasks/result` waits for the end and answers the call's result, and `tasks/cancel` cancels
upstream. Its session (its connection: stdio, or a Streamable HTTP session) holds the book, and
what it left is cancelled upstream when that session ends.

A task that asks for input: a 2026-07-28 host that declares elicitation gets its input
requests (elicitation requests, their text bounded and escaped) in the `tasks/get` answer and
answers them with `tasks/update`, passed to the server. For any other host the gateway answers
them as the runtime answers one it follows, when the status is asked (elicitation where the
server has it on, else cancelled with an error naming the setting).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import anyio

from hostlink.gateway import results
from hostlink.gateway.hosts import host_connection
from hostlink.host import ToolResult
from hostlink.host.output import one_line
from hostlink.mcp import CANCEL_SECONDS, ID_CHARS, MAX_IN_FLIGHT, MAX_INPUTS, McpError

if TYPE_CHECKING:
    from mcp_types import CallToolResult

    from hostlink.gateway.peer import Peer
    from hostlink.host.output import OutputSession
    from hostlink.mcp import Status, Tasks

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
POLL_MS = 500  # the interval the host is asked to poll at (each poll is one upstream tasks/get)


def session(ctx: Any) -> Any:
    """What a request's session is, for the book of its tasks: on 2025-11-25 its connection,
    which lasts as long as the session. On 2026-07-28 every request comes with a connection of
    its own, and what lasts is the stream it came on (stdio: the SDK's outbound channel of that
    stream); None where no stream lasts (Streamable HTTP's single exchanges, which carry no
    session id: no session exists to hold a task)."""
    connection = host_connection(ctx)
    if getattr(ctx, "protocol_version", None) == LEGACY:
        return connection
    return connection.outbound if getattr(connection, "has_standalone_channel", False) else None


def asked_as_task(ctx: Any, params: Any) -> bool:
    """Whether a 2025-11-25 host asked this `tools/call` to run as a task (`params.task`)."""
    return getattr(ctx, "protocol_version", None) == LEGACY and getattr(params, "task", None) is not None


def declares_tasks(ctx: Any) -> bool:
    """Whether the MCP host of this request speaks the tasks extension (2026-07-28) on a
    session that can hold tasks."""
    if getattr(ctx, "protocol_version", None) != MODERN or session(ctx) is None:
        return False
    capabilities = getattr(host_connection(ctx), "client_capabilities", None)
    extensions = getattr(capabilities, "extensions", None)
    return isinstance(extensions, dict) and TASKS_EXTENSION in extensions


@dataclass
class _Entry:
    """A task handed to a host: the server's task, or a call the server answered at once."""

    server: str
    upstream: str | None  # the server's task id (None: `ended` holds the call's result)
    created: str  # when, as 2025-11-25 hosts are told
    ended: CallToolResult | None = None  # that result, already passed through (results.passed_through)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def answers_input(ctx: Any) -> bool:
    """Whether a 2026-07-28 host can answer a task's input requests itself (it declares
    elicitation): then they are handed to it, and it answers them with `tasks/update`."""
    capabilities = getattr(host_connection(ctx), "client_capabilities", None)
    return getattr(ctx, "protocol_version", None) == MODERN and getattr(capabilities, "elicitation", None) is not None


class HostTasks:
    """The tasks handed to MCP hosts, per session: own id -> the server and its task."""

    def __init__(self, tasks: Callable[[], Tasks], peer: Peer, output: Callable[[], OutputSession | None]) -> None:
        self._tasks, self._peer, self._output = tasks, peer, output
        self._books: dict[Any, dict[str, _Entry]] = {}

    def _book(self, ctx: Any) -> dict[str, _Entry]:
        key = session(ctx)
        book = self._books.get(key)
        if book is None:
            book = self._books[key] = {}
            if key is host_connection(ctx):  # a 2025-11-25 session: its end cancels what it left
                key.exit_stack.push_async_callback(self._ended, key)
        return book

    async def _ended(self, key: Any) -> None:
        await self._cancel_left([self._books.pop(key, {})])

    def refusal(self, ctx: Any) -> Any:
        """A tool error when this session already holds MAX_IN_FLIGHT tasks (checked before a
        call that would become a task, so that no task is started for nothing), else None."""
        if len(self._books.get(session(ctx), {})) < MAX_IN_FLIGHT:
            return None
        return results.error_result(f"this session already has {MAX_IN_FLIGHT} tasks in flight, the most it may "
                                    "have; collect one (tasks/get until it ends) or cancel one (tasks/cancel) first")

    async def created(self, ctx: Any, server: str, handle: dict[str, Any]) -> Any:
        """The answer to a call whose task is running upstream: a task of the gateway's, or a
        tool error when the connection already holds MAX_IN_FLIGHT (the new task is cancelled)."""
        upstream, status = str(handle.get("taskId")), str(handle.get("status"))
        if len(self._book(ctx)) >= MAX_IN_FLIGHT:
            await self._cancel_quietly(server, upstream)
            return results.error_result(
                f"this session already has {MAX_IN_FLIGHT} tasks in flight, the most it may have; collect or "
                f"cancel one first. The task MCP server {server!r} started for this call was cancelled")
        return self._handed(ctx, _Entry(server, upstream, _now()), status)

    def finished(self, ctx: Any, server: str, result: Any) -> Any:
        """A 2025-11-25 host asked for a task and the server answered at once: a task that ended."""
        return self._handed(ctx, _Entry(server, None, _now(), result), "completed")  # an error result too

    def _handed(self, ctx: Any, entry: _Entry, status: str) -> Any:
        own = secrets.token_urlsafe(16)
        self._book(ctx)[own] = entry
        if getattr(ctx, "protocol_version", None) == LEGACY:
            return {"task": _legacy_task(own, entry, status, None)}
        return {"resultType": "task", "taskId": own, "status": status, "pollIntervalMs": POLL_MS}

    def _find(self, ctx: Any, task_id: str) -> _Entry:
        found = self._books.get(session(ctx), {}).get(task_id)
        if found is None:
            from mcp import MCPError
            from mcp_types import INVALID_PARAMS

            raise MCPError(INVALID_PARAMS, f"Unknown task: {one_line(task_id, ID_CHARS)!r} (no task of this session)")
        return found

    async def _state(self, ctx: Any, entry: _Entry) -> Status:
        """The task now (`Status`); its input requests handed back where the host can answer them."""
        from hostlink.mcp import Status

        if entry.upstream is None:
            return Status("completed", None, entry.ended)
        upstream, forward = entry.upstream, answers_input(ctx)
        found: Status = await self._served(
            ctx, entry.server, lambda: self._tasks().status(entry.server, upstream, forward=forward))
        return found

    def _passed(self, ended: Any) -> dict[str, Any]:
        """The call's result as the host gets any tool result: bounded and sanitized."""
        return _dumped(results.passed_through(ToolResult(content=[], details={
            "result": ended, "structuredContent": ended.structured_content}), self._output()))

    async def get(self, ctx: Any, params: Any) -> Any:
        """`tasks/get`: the upstream task's status now; on 2026-07-28 with its result or error
        once it ended (on 2025-11-25 that is for `tasks/result`)."""
        entry = self._find(ctx, params.task_id)
        status, message, ended, asked = await self._state(ctx, entry)
        if getattr(ctx, "protocol_version", None) == LEGACY:
            return _legacy_task(params.task_id, entry, status, message)
        answer: dict[str, Any] = {"taskId": params.task_id, "status": status, "pollIntervalMs": POLL_MS}
        if message:
            answer["statusMessage"] = message
        if asked is not None:
            answer["inputRequests"] = asked
        if ended is None:
            return answer
        self._books.get(session(ctx), {}).pop(params.task_id, None)
        if status == "completed":
            answer["result"] = self._passed(ended)
        elif status == "failed":
            said = " ".join(getattr(block, "text", "") for block in ended.content)
            answer["error"] = {"code": -32603, "message": one_line(said, 300)}
        return answer

    async def result(self, ctx: Any, params: Any) -> Any:
        """`tasks/result` (2025-11-25): wait for the task to end; the call's result (a failed
        or cancelled task's as an error result). The task is collected."""
        entry = self._find(ctx, params.task_id)
        while (ended := (await self._state(ctx, entry)).ended) is None:
            await anyio.sleep(POLL_MS / 1000)
        self._books.get(session(ctx), {}).pop(params.task_id, None)
        passed = _dumped(ended) if entry.upstream is None else self._passed(ended)  # passed when the call answered
        return {key: value for key, value in passed.items() if key != "resultType"}  # 2025-11-25 has none

    async def update(self, ctx: Any, params: Any) -> Any:
        """`tasks/update` (2026-07-28): the host's answers to the input requests its `tasks/get`
        handed it, passed to the server's task."""
        entry = self._find(ctx, params.task_id)
        upstream = entry.upstream
        if upstream is None or len(params.input_responses) > MAX_INPUTS:
            from mcp import MCPError
            from mcp_types import INVALID_PARAMS

            raise MCPError(INVALID_PARAMS, f"task {one_line(params.task_id, ID_CHARS)!r} asked for no such input")
        await self._served(ctx, entry.server, lambda: self._tasks().update(entry.server, upstream,
                                                                            params.input_responses))
        return {}

    async def cancel(self, ctx: Any, params: Any) -> Any:
        """`tasks/cancel`: ask the upstream server to cancel; the status it reports after that."""
        entry = self._find(ctx, params.task_id)
        upstream = entry.upstream
        if upstream is None:
            status = "completed"
        else:
            status = await self._served(ctx, entry.server, lambda: self._tasks().cancel(entry.server, upstream))
        if status in ("completed", "failed", "cancelled"):
            self._books.get(session(ctx), {}).pop(params.task_id, None)
        if getattr(ctx, "protocol_version", None) == LEGACY:
            return _legacy_task(params.task_id, entry, status, None)
        return {"taskId": params.task_id, "status": status}

    async def _served(self, ctx: Any, server: str, work: Callable[[], Any]) -> Any:
        from mcp import MCPError
        from mcp_types import INTERNAL_ERROR

        from hostlink.host.output import strip_controls

        try:
            with self._peer.serving(ctx, server):
                return await work()
        except McpError as error:
            raise MCPError(INTERNAL_ERROR, strip_controls(str(error))) from None

    async def aclose(self) -> None:
        """Serving ended: cancel upstream what every session left (each cancel bounded)."""
        books = list(self._books.values())
        self._books.clear()
        await self._cancel_left(books)

    async def _cancel_left(self, books: list[dict[str, _Entry]]) -> None:
        left = [(entry.server, entry.upstream) for book in books for entry in book.values()
                if entry.upstream is not None]
        if not left:
            return
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as group:
                for server, upstream in left:
                    group.start_soon(self._cancel_quietly, server, upstream)

    async def _cancel_quietly(self, server: str, upstream: str) -> None:
        with anyio.move_on_after(CANCEL_SECONDS * 2):
            try:
                await self._tasks().cancel(server, upstream)
            except McpError:
                pass  # the server is gone or refused: nothing more to do


def _legacy_task(own: str, entry: _Entry, status: str, message: str | None) -> dict[str, Any]:
    """A task as 2025-11-25 says it: kept until its session ends (no ttl)."""
    task: dict[str, Any] = {"taskId": own, "status": status, "createdAt": entry.created, "lastUpdatedAt": _now(),
                            "ttl": None, "pollInterval": POLL_MS}
    if message:
        task["statusMessage"] = message
    return task


def _dumped(result: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dumped
