"""MCP tasks (opt-in per server with `"tasks": true`): the policy, the same for both shapes —
the 2026-07-28 extension (`task_wire`) and the 2025-11-25 one (`task_wire_legacy`).

A call the server runs as a task is followed with `tasks/get`, the first after FIRST_POLL seconds and
each next one twice as late, up to the server's `pollIntervalMs` (kept between MIN_POLL and
MAX_POLL seconds), so a quick task is seen at once and a long one at the server's pace, up to the
call's bound (`toolTimeoutMs`, or the
host's timeout for the call); its `statusMessage` (polled, or from a `notifications/tasks/status`,
which also ends a wait early when it says the task ended) goes to the host's progress listener, and a
task that ends in time is the call's ordinary result. A task that outlives the bound is not lost:
the call answers with a handle (server, task id, status, how to check) and the task stays in the
session's book, which holds at most MAX_IN_FLIGHT; the `mcp` tool's `task` and `cancel` actions
continue from it, and what the session never collected is cancelled when it ends (unless the
host detached the call). Nothing polls outside a call: no task of hostlink's outlives it.

Everything a server says about a task is checked: an unknown status, an unusable or changed task
id, a `ttlMs` of 0, a result that is no tool result, a `tasks/get` that does not answer — each a
clear error. A task that asks for input is answered through elicitation where the server has it
on, and cancelled with an error naming the setting otherwise (2026-07-28; a 2025-11-25 server asks
through its own elicitation requests, answered as any other). The wire is `task_wire` or
`task_wire_legacy`, by the connection's protocol.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import anyio

from hostlink.host.output import one_line
from hostlink.host.progress import current_watch
from hostlink.mcp.errors import CallFailed, McpError, RequestTimedOut
from hostlink.mcp.runtime.asking import asked_by
from hostlink.mcp.runtime.progress import stop_silence_clock

if TYPE_CHECKING:
    from mcp import Client
    from mcp.client.session import ClientSession
    from mcp_types import CallToolResult

    from hostlink.mcp.config.schema import ServerConfig
    from hostlink.mcp.runtime.task_wire import StatusParams, TaskCreated, TasksExtension, TaskState
    from hostlink.mcp.runtime.task_wire_legacy import Send

FIRST_POLL = 0.01  # the first poll after a start or an answer; each next one waits twice as long, up to
MIN_POLL = 0.05  # the server's interval, kept at least this long whatever it asks (0 must not spin)
MAX_POLL = 5.0  # and at most (a day must not stall a call)
DEFAULT_POLL = 1.0  # when the server gives no pollIntervalMs
MAX_IN_FLIGHT = 8  # handles a session may hold before a new one is refused
MAX_INPUTS = 10  # input requests answered in one round
CANCEL_SECONDS = 2.0  # a cancel at teardown waits this long for its answer
ID_CHARS = 200
MESSAGE_CHARS = 300
MAX_QUESTION_CHARS = 16_384  # an input request handed to a host, its schema included
STATUSES = ("working", "input_required", "completed", "failed", "cancelled")
TERMINAL = ("completed", "failed", "cancelled")
HANDLE_KEY = "hostlink/task"  # the `_meta` key of a handle: {server, taskId, status}

LEGACY = "2025-11-25"  # the protocol whose connections speak the older shape
OnClient = Callable[[str, str, Callable[[Any, Any], Awaitable[Any]]], Awaitable[Any]]


@dataclass(frozen=True)
class Handle:
    """A task that is still running when its wait ended: what the model and the person see."""

    server: str
    task_id: str
    status: str
    message: str | None
    tool: str | None = None

    def text(self) -> str:
        what = (f"The call of tool {self.tool!r} is still running on MCP server {self.server!r} as task "
                f"{self.task_id!r}" if self.tool
                else f"Task {self.task_id!r} of MCP server {self.server!r} is still running")
        said = f": {self.message}" if self.message else ""
        return (f"{what} (status {self.status}{said}). It was not lost: check it with the mcp "
                f"tool's action 'task' (server {self.server!r}, task {self.task_id!r}; 'wait' waits up to that "
                "many seconds for it), or end it with action 'cancel'.")

    def result(self) -> CallToolResult:
        from mcp_types import CallToolResult, TextContent

        return CallToolResult(content=[TextContent(type="text", text=self.text())],
                              meta={HANDLE_KEY: {"server": self.server, "taskId": self.task_id,
                                                  "status": self.status}})


class Status(NamedTuple):
    """A task as one `tasks/get` found it."""

    status: str
    message: str | None
    ended: CallToolResult | None = None  # once it ended: the call's result
    asked: dict[str, Any] | None = None  # input requests handed back (`Tasks.status(forward=True)`)


def _questions(view: _View) -> dict[str, Any] | None:
    """A task's input requests as elicitation requests, their text bounded and escaped like
    any result; None when they are anything else (then they are answered as hostlink answers them)."""
    from hostlink.host.output import strip_controls
    from hostlink.mcp.runtime.task_wire import elicit_params

    requests = view.state.input_requests if view.state is not None else None
    if not isinstance(requests, dict) or not requests or len(requests) > MAX_INPUTS:
        return None
    asked: dict[str, Any] = {}
    for key, payload in requests.items():
        try:
            params = elicit_params(payload)
        except ValueError:
            return None
        dumped = params.model_dump(by_alias=True, mode="json", exclude_none=True)
        if one_line(key, ID_CHARS) != key or len(str(dumped)) > MAX_QUESTION_CHARS:
            return None
        dumped["message"] = strip_controls(params.message)[:MESSAGE_CHARS * 10]
        asked[key] = {"method": "elicitation/create", "params": dumped}
    return asked


class TaskPending(Exception):  # not a failure: the wait ended before the task did
    """The wait for a task ended first; `handle` says how to check it later."""

    def __init__(self, handle: Handle) -> None:
        super().__init__(handle.text())
        self.handle = handle


@dataclass(frozen=True)
class _View:
    """One checked observation of a task."""

    task_id: str
    status: str
    message: str | None
    poll: float
    state: TaskState | None  # a `tasks/get` answer (None: the task as it was created)


@dataclass
class _Live:
    """What `notifications/tasks/status` said of a task being followed."""

    wake: anyio.Event = field(default_factory=anyio.Event)
    message: str | None = None
    ended: bool = False  # it said the task reached a terminal status: poll now


def _wire(session: ClientSession) -> Any:
    """The module that speaks the connection's shape of tasks."""
    if session.protocol_version == LEGACY:
        from hostlink.mcp.runtime import task_wire_legacy as legacy

        return legacy
    from hostlink.mcp.runtime import task_wire

    return task_wire


def tasks_needed(server: str, config: ServerConfig, what: str, version: str | None) -> str:
    """Why a call the server runs only as a task was refused, and what to set."""
    if not config.tasks:
        return (f'MCP server {server!r} runs {what} only as a task; set "tasks": true in its configuration to '
                "allow it (`hostlink mcp add --tasks`, or edit its entry)")
    declares = " and its server declares no tasks for tools/call" if version == LEGACY else ""
    return (f"MCP server {server!r} runs {what} only as a task, which hostlink runs on protocol 2026-07-28 "
            "connections and on 2025-11-25 ones whose server declares tasks for tools/call (this one speaks "
            f"{version or 'an older protocol'}{declares})")


class Tasks:
    """The tasks of one session: following them, the handles it gave out, its teardown.

    `config(name)` is a server's configuration, `elicitation(name)` the SDK elicitation callback
    of a server (None when the host cannot ask), `on_client` the runtime's `on_client`.
    """

    def __init__(self, config: Callable[[str], ServerConfig], elicitation: Callable[[str], Any] | None,
                 on_client: OnClient, connected: Callable[[str], bool]) -> None:
        self._config, self._elicitation, self._on_client, self._connected = config, elicitation, on_client, connected
        self._book: dict[tuple[str, str], bool] = {}  # (server, task id) -> detached
        self._live: dict[tuple[str, str], _Live] = {}  # the tasks being followed now

    def extension(self, name: str) -> TasksExtension:
        """The client extension of server `name`: a task answer is followed here, a status
        notification heard here."""
        from hostlink.mcp.runtime.task_wire import TasksExtension

        async def heard(params: StatusParams) -> None:
            live = self._live.get((name, params.task_id)) if isinstance(params.task_id, str) else None
            if live is None:
                return  # not a task hostlink is following now
            if isinstance(params.status_message, str):
                live.message = one_line(params.status_message, MESSAGE_CHARS) or None
            live.ended = live.ended or params.status in TERMINAL
            live.wake.set()

        return TasksExtension(self._follower(name), heard)

    def sender(self, name: str, client: Client, tool: str,
               tools: Callable[..., Awaitable[tuple[Any, ...]]]) -> Send | None:
        """For a 2025-11-25 connection of a server with tasks: a stand-in for `client.call_tool`
        that asks a tool whose listing allows it to run as a task (`tools(name, refresh=False)`
        is the listing); None where the call goes out as it is."""
        if not self._config(name).tasks or client.protocol_version != LEGACY:
            return None
        from hostlink.mcp.runtime.task_wire_legacy import SUPPORTS, speaks_tasks, task_call, task_support

        session, follow = client.session, self._follower(name)
        if not speaks_tasks(session):
            return None
        as_task = task_call(session, lambda created: follow(created, session, tool))

        async def send(name_: str, arguments: dict[str, Any], **options: Any) -> CallToolResult:
            listed = next((entry for entry in await tools(name, refresh=False) if entry.name == name_), None)
            call = as_task if task_support(listed) in SUPPORTS else client.call_tool
            result: CallToolResult = await call(name_, arguments, **options)
            return result

        return send

    def _follower(self, name: str) -> Callable[[TaskCreated, ClientSession, str], Awaitable[CallToolResult]]:
        async def follow(created: TaskCreated, session: ClientSession, tool: str) -> CallToolResult:
            watch = current_watch()
            config = self._config(name)
            bound = (0.0 if watch.detach else watch.timeout if watch.timeout is not None
                     else config.tool_timeout_ms / 1000)
            stop_silence_clock()  # the task's own bound decides from here
            view = self._checked(name, created, None)
            return await self._drive(name, session, view, bound, tool=tool, detached=watch.detach)

        return follow

    async def check(self, name: str, task_id: str, wait: float) -> CallToolResult:
        """A task's result, or a handle when it is still running after `wait` seconds."""
        async def work(client: Any, _group: Any) -> CallToolResult:
            session = client.session
            state = await self._get(name, session, task_id)
            return await self._drive(name, session, self._checked(name, state, task_id), wait)

        try:
            result: CallToolResult = await self._run(name, f"tasks/get of task {one_line(task_id, ID_CHARS)!r}", work)
            return result
        except TaskPending as pending:
            return pending.handle.result()

    async def cancel(self, name: str, task_id: str) -> str:
        """Ask the server to cancel the task; its status after that."""
        async def work(client: Any, _group: Any) -> str:
            timeout = self._config(name).request_timeout_ms / 1000
            await _wire(client.session).cancel_task(client.session, task_id, timeout)
            self._book.pop((name, task_id), None)
            state = await self._get(name, client.session, task_id)
            return self._checked(name, state, task_id).status

        return str(await self._run(name, f"tasks/cancel of task {one_line(task_id, ID_CHARS)!r}", work))

    async def status(self, name: str, task_id: str, *, forward: bool = False) -> Status:
        """One `tasks/get` of a task, without waiting: its status and message, and once it
        ended the call's result (a failed or cancelled task's as an error result). A task that
        asks for input is answered as a followed one is (`_answer`), or with `forward` (a
        2026-07-28 connection) its questions are handed back, bounded, for the caller to answer
        through `update`."""
        async def work(client: Any, _group: Any) -> Status:
            view = self._checked(name, await self._get(name, client.session, task_id), task_id)
            if view.status == "input_required":
                asked = _questions(view) if forward and client.session.protocol_version != LEGACY else None
                if asked is not None:
                    return Status("input_required", view.message, None, asked)
                await self._answer(name, client.session, view)  # answered here, or cancelled naming why
                return Status("working", view.message)
            if view.status not in TERMINAL:
                return Status(view.status, view.message)
            self._book.pop((name, task_id), None)
            return Status(view.status, view.message, self._finished(name, view))

        found: Status = await self._run(name, f"tasks/get of task {one_line(task_id, ID_CHARS)!r}", work)
        return found

    async def update(self, name: str, task_id: str, responses: dict[str, Any]) -> None:
        """`tasks/update`: answers to the input requests `status` handed back (2026-07-28)."""
        from hostlink.mcp.runtime.task_wire import update_task

        async def work(client: Any, _group: Any) -> None:
            await update_task(client.session, task_id, responses, self._config(name).request_timeout_ms / 1000)

        await self._run(name, f"tasks/update of task {one_line(task_id, ID_CHARS)!r}", work)

    def hand_over(self, name: str, task_id: str) -> None:
        """The person was given this task's id (a command printed it): the session's end leaves it running."""
        if (name, task_id) in self._book:
            self._book[(name, task_id)] = True

    async def _run(self, name: str, what: str, work: Callable[[Any, Any], Awaitable[Any]]) -> Any:
        if not self._config(name).tasks:
            raise CallFailed(f'MCP server {name!r} is not configured for tasks; set "tasks": true in its '
                             "configuration to use them")
        return await self._on_client(name, what, work)

    async def aclose(self) -> None:
        """Cancel what the session left running and never collected (not what it detached)."""
        left = [key for key, detached in self._book.items() if not detached and self._connected(key[0])]
        self._book.clear()
        if not left:
            return  # and the SDK stays unimported in a session that never used it

        async def cancel(name: str, task_id: str) -> None:
            with anyio.move_on_after(CANCEL_SECONDS):
                try:
                    await self._on_client(name, "tasks/cancel", lambda client, _g: _wire(
                        client.session).cancel_task(client.session, task_id, CANCEL_SECONDS))
                except McpError:
                    pass  # the server is gone or refused: nothing more to do at teardown

        async with anyio.create_task_group() as group:
            for name, task_id in left:
                group.start_soon(cancel, name, task_id)

    # --- following a task --------------------------------------------------------------

    async def _drive(self, name: str, session: ClientSession, view: _View, bound: float, *,
                     tool: str | None = None, detached: bool = False) -> CallToolResult:
        deadline = anyio.current_time() + bound
        watch, shown, delay, told = current_watch(), None, FIRST_POLL, 0
        key = (name, view.task_id)
        live = self._live.setdefault(key, _Live())

        def show(message: str | None) -> None:
            nonlocal shown, told
            if message != shown and message and watch.listener is not None:
                told += 1  # the count a progress display shows: status messages so far
                watch.listener(float(told), None, message)
            shown = message or shown

        try:
            while True:
                show(view.message)
                if view.state is not None and view.status in TERMINAL:
                    self._book.pop((name, view.task_id), None)
                    return self._finished(name, view)
                if deadline - anyio.current_time() <= 0:
                    await self._keep(name, session, view.task_id, detached)
                    raise TaskPending(Handle(name, view.task_id, view.status, view.message, tool))
                if view.state is not None and view.status == "input_required":
                    with anyio.move_on_after(deadline - anyio.current_time()):
                        await self._answer(name, session, view)
                    delay = FIRST_POLL
                await self._pause(live, max(min(delay, deadline - anyio.current_time()), 0.0), show)
                delay = min(delay * 2, view.poll)  # quick tasks are seen at once, long ones at the server's pace
                view = self._checked(name, await self._get(name, session, view.task_id), view.task_id)
        finally:
            if self._live.get(key) is live:
                del self._live[key]

    @staticmethod
    async def _pause(live: _Live, seconds: float, show: Callable[[str | None], None]) -> None:
        """Wait `seconds`, showing what status notifications say meanwhile; less when one says the task ended."""
        end = anyio.current_time() + seconds
        while not live.ended and (left := end - anyio.current_time()) > 0:
            live.wake = anyio.Event()
            with anyio.move_on_after(left):
                await live.wake.wait()
            show(live.message)
            live.message = None  # shown: a later poll's message is the news, not this again
        live.ended = False  # the poll that follows says what it is

    async def _keep(self, name: str, session: ClientSession, task_id: str, detached: bool) -> None:
        if (name, task_id) not in self._book and len(self._book) >= MAX_IN_FLIGHT:
            await self._cancel_quietly(session, task_id)  # nobody would hold its handle
            raise CallFailed(f"this session already has {MAX_IN_FLIGHT} tasks in flight, the most it may have; "
                             f"collect or cancel one (the mcp tool's actions 'task' and 'cancel') first. Task "
                             f"{task_id!r} of MCP server {name!r} was cancelled")
        self._book[(name, task_id)] = detached

    async def _get(self, name: str, session: ClientSession, task_id: str) -> TaskState:
        from mcp import MCPError
        from mcp_types import REQUEST_TIMEOUT

        ms = self._config(name).request_timeout_ms
        try:
            state: TaskState = await _wire(session).get_task(session, task_id, ms / 1000)
            return state
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                raise RequestTimedOut(f"MCP server {name!r} did not answer tasks/get for task {task_id!r} within "
                                      f"{ms} ms (its requestTimeoutMs)") from None
            raise

    def _checked(self, name: str, answer: TaskCreated | TaskState, expected: str | None) -> _View:
        """The server's answer as a `_View`; CallFailed when it is not a task hostlink can follow."""
        from hostlink.mcp.runtime.task_wire import TaskState

        task_id = answer.task_id
        if not isinstance(task_id, str) or not task_id or one_line(task_id, ID_CHARS) != task_id:
            raise CallFailed(f"MCP server {name!r} answered with a task id hostlink cannot use (not a short, "
                             "plain text)")
        problem = None
        if expected is not None and task_id != expected:
            problem = f"answered for task {expected!r} with another task, {task_id!r}"
        elif answer.status not in STATUSES:
            status = one_line(str(answer.status), 40)
            problem = f"reported task {task_id!r} in a status MCP does not define ({status!r})"
        elif isinstance(answer.ttl_ms, int | float) and not isinstance(answer.ttl_ms, bool) and answer.ttl_ms <= 0:
            problem = f"gave task {task_id!r} a ttlMs of {answer.ttl_ms:g}: it would keep no result to collect"
        if problem is not None:
            self._book.pop((name, expected or task_id), None)
            raise CallFailed(f"MCP server {name!r} {problem}")
        poll = answer.poll_interval_ms
        seconds = poll / 1000 if isinstance(poll, int | float) and not isinstance(poll, bool) else DEFAULT_POLL
        message = answer.status_message if isinstance(answer.status_message, str) else None
        return _View(task_id, answer.status, one_line(message, MESSAGE_CHARS) or None,
                     min(max(seconds, MIN_POLL), MAX_POLL) if math.isfinite(seconds) else MAX_POLL,
                     answer if isinstance(answer, TaskState) else None)

    def _finished(self, name: str, view: _View) -> CallToolResult:
        from mcp_types import CallToolResult, TextContent

        from hostlink.mcp.runtime.task_wire import call_result

        assert view.state is not None
        if view.status == "completed":
            try:
                return call_result(view.state.result)
            except ValueError:
                raise CallFailed(f"MCP server {name!r} completed task {view.task_id!r} with a result that is not "
                                 "a tool result") from None
        if view.status == "failed":
            error = view.state.error
            said = error.get("message") if isinstance(error, dict) else None
            reason = one_line(said if isinstance(said, str) else view.message, MESSAGE_CHARS) or "no reason given"
            text = f"task {view.task_id!r} failed: {reason}"
        else:
            text = f"task {view.task_id!r} was cancelled"
        return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)

    async def _answer(self, name: str, session: ClientSession, view: _View) -> None:
        """Answer the task's input requests through elicitation, or cancel it with an error. On
        2025-11-25 the server asks while a `tasks/result` is open, through the connection's
        elicitation callback."""
        from hostlink.mcp.runtime.task_wire import elicit_params, update_task

        assert view.state is not None
        requests = view.state.input_requests
        elicit: Any = (asked_by(name, self._elicitation(name)) if self._elicitation is not None
                       and self._config(name).elicitation else None)
        problem = None
        if elicit is None:
            problem = ('asks for input, which needs "elicitation": true in its configuration (and a host that can '
                       "ask the person)")
        elif session.protocol_version == LEGACY:
            await _wire(session).attend(session, view.task_id)
            return
        elif not isinstance(requests, dict) or not requests or len(requests) > MAX_INPUTS:
            problem = f"asks for input in a form hostlink does not answer (1 to {MAX_INPUTS} requests)"
        if problem is None:
            responses: dict[str, Any] = {}
            for key, payload in requests.items():
                try:
                    params = elicit_params(payload)
                except ValueError:
                    problem = "asks for input other than a question to the person (elicitation)"
                    break
                answer = await elicit(None, params)
                responses[key] = answer.model_dump(by_alias=True, mode="json", exclude_none=True)
            else:
                await update_task(session, view.task_id, responses, self._config(name).request_timeout_ms / 1000)
                return
        await self._cancel_quietly(session, view.task_id)
        self._book.pop((name, view.task_id), None)
        raise CallFailed(f"MCP server {name!r} task {view.task_id!r} {problem}; the task was cancelled")

    async def _cancel_quietly(self, session: ClientSession, task_id: str) -> None:
        from mcp import MCPError

        with anyio.move_on_after(CANCEL_SECONDS):
            try:
                await _wire(session).cancel_task(session, task_id, CANCEL_SECONDS)
            except MCPError:
                pass  # the error being raised says what matters
