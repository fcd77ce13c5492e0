"""One SDK client per configured MCP server: shared lazy setup, independent calls, teardown.

The SDK does the protocol (framing, negotiation, cancellation, pagination, validation);
this module does policy. Each connection is owned by one background task, because the
SDK's transports hold task groups that must be entered and left in the same task and no
caller may own them: a cancelled caller must never take the connection down with it.
Callers only wait on events and send requests; shared work (setup, `tools/list`) runs in
the owner's task group so that cancelling one waiter leaves the others served.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.abc

from hostlink.host.output import one_line
from hostlink.mcp.config.load import enabled_config
from hostlink.mcp.config.schema import HttpServer, ServerConfig
from hostlink.mcp.errors import (
    AuthError,
    AuthRequired,
    CallFailed,
    ConnectFailed,
    McpError,
    RequestTimedOut,
    first_error,
)
from hostlink.mcp.runtime.asking import asked_by
from hostlink.mcp.runtime.listing import ToolLister, watch_changes
from hostlink.mcp.runtime.progress import call_with_progress
from hostlink.mcp.runtime.restart import Restarts
from hostlink.mcp.runtime.roots import Roots
from hostlink.mcp.runtime.sdk_log import take_over_sdk_logging
from hostlink.mcp.runtime.server_log import ServerLog
from hostlink.mcp.runtime.snapshot import Snapshot
from hostlink.mcp.runtime.tasks import TaskPending, Tasks, tasks_needed
from hostlink.mcp.transports import (
    MODERN_VERSION,
    Transport,
    client_factory,
    describe,
    open_transport,
    verify_modern,
    with_words,
)

if TYPE_CHECKING:
    import httpx2
    from mcp import Client
    from mcp_types import Tool

    from hostlink.mcp.auth.manager import AuthManager
    from hostlink.mcp.runtime.cache import ToolCache

TIMEOUT_SHARE = 0.9  # an SDK timeout arrives after the request's whole timeout, a server's own earlier
SERVER_TEXT_LIMIT = 300  # characters of a server's own error message shown in ours

T = TypeVar("T")


@dataclass(eq=False)
class _Connection:
    """Mutable bookkeeping of one connection generation; `reconnect` makes a new one."""

    snapshot: Snapshot
    config: ServerConfig
    ready: anyio.Event
    transport: Transport
    closing: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)
    client: Client | None = None
    group: anyio.abc.TaskGroup | None = None
    scope: anyio.CancelScope | None = None
    task: asyncio.Task[None] | None = None
    lister: ToolLister | None = None  # from setup on
    restart: bool = False  # an automatic restart: its failed setup is a crash too
    log: ServerLog | None = None  # from setup on: the server's log messages to the calls that want them


class McpRuntime:
    """Connections to the configured servers of one host session.

    `command` is how a person runs this host's commands (`hostlink`, `llm`): advice in
    messages names it. `broken` holds the configured names whose entries cannot be used,
    with the reason. `elicitation(name)` and `sampling(name, settings)` give the SDK
    callbacks of a server that opted in, when the host can ask (none otherwise). `cache`
    keeps the tool listings of servers with `cacheTools`. `restarts`: see `restart` (default: latched).
    """

    def __init__(self, servers: Mapping[str, ServerConfig], *, auth: AuthManager | None = None,
                 command: str = "hostlink", broken: Mapping[str, str] | None = None,
                 elicitation: Callable[[str], Any] | None = None,
                 sampling: Callable[[str, Any], Any] | None = None, root: Path | Roots | None = None,
                 cache: ToolCache | None = None, restarts: Restarts | None = None) -> None:
        take_over_sdk_logging()
        self._restarts = restarts or Restarts(None, auto=False)
        self._roots = root if isinstance(root, Roots) else Roots(root)  # the trusted project's directory
        self._servers, self._broken, self._auth = dict(servers), dict(broken or {}), auth
        self._elicitation, self._sampling, self._cache, self._command = elicitation, sampling, cache, command
        self._conns: dict[str, _Connection] = {}
        self.notice_listeners: list[Callable[[str, Any], Awaitable[None]]] = []  # hear every server's notices
        self.tasks = Tasks(self.config, elicitation, self.on_client, lambda name: self.snapshot(name).state
                           == "connected")
        self._closed = False

    # --- state -------------------------------------------------------------------------

    @property
    def servers(self) -> Mapping[str, ServerConfig]:
        return self._servers

    @property
    def broken(self) -> Mapping[str, str]:
        return self._broken

    @property
    def auth(self) -> AuthManager | None:
        return self._auth

    def snapshot(self, name: str) -> Snapshot:
        """The current snapshot; never connects."""
        config = self.config(name)
        conn = self._conns.get(name)
        return conn.snapshot if conn is not None else Snapshot(name, config.transport)

    def config(self, name: str) -> ServerConfig:
        """The configuration of an enabled server; ServerNotFound or ServerDisabled otherwise."""
        return enabled_config(self._servers, name, broken=self._broken)

    def _connection(self, name: str) -> _Connection:
        if self._closed:
            raise ConnectFailed("the MCP runtime is shut down")
        config = self.config(name)
        conn = self._conns.get(name)
        if conn is None:
            ready = anyio.Event()
            transport = open_transport(config, auth=lambda: self._http_auth(name, config), ready=ready)
            conn = self._conns[name] = _Connection(Snapshot(name, config.transport), config, ready, transport)
        return conn

    def _publish(self, conn: _Connection, **changes: Any) -> None:
        conn.snapshot = replace(conn.snapshot, **changes)

    # --- setup -------------------------------------------------------------------------

    async def connect(self, name: str) -> Snapshot:
        """Connect if idle (sharing a setup already in flight); raise the latched error."""
        conn = await self._ready(name)
        return conn.snapshot

    async def _ready(self, name: str) -> _Connection:
        if self._restarts.due(name) and (crashed := self._conns.pop(name, None)) is not None:
            self._connection(name).restart = True  # raised instead when it is down and no restart is due
            await self._close(crashed)  # its owner is done or ending: the crash closed it
        conn = self._connection(name)
        if conn.snapshot.state == "idle":
            self._publish(conn, state="connecting")
            conn.task = asyncio.get_running_loop().create_task(self._own(conn))
        if not conn.ready.is_set():  # a set event's wait still yields to the loop: once per call
            await conn.ready.wait()
        if conn.snapshot.state != "connected":
            raise conn.snapshot.error or ConnectFailed(f"MCP server {name!r} is not connected")
        return conn

    async def _own(self, conn: _Connection) -> None:
        """The owner task: set up, publish, hold the client open until asked to close."""
        name = conn.snapshot.server
        timeout = conn.config.request_timeout_ms / 1000
        error: McpError | None = None
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + timeout) as scope:
                conn.scope = scope
                async with anyio.create_task_group() as group:
                    conn.group = group
                    try:
                        async with AsyncExitStack() as stack:
                            client = await self._open(stack, conn)
                            scope.deadline = math.inf
                            conn.client = client
                            self._publish(conn, state="connected", **describe(client, conn.config.tasks))
                            conn.ready.set()
                            await conn.closing.wait()
                    finally:
                        if not conn.ready.is_set():
                            await conn.transport.abandon()
                        group.cancel_scope.cancel()
            if not conn.ready.is_set():
                if conn.closing.is_set():
                    error = ConnectFailed(f"setup of MCP server {name!r} was stopped by shutdown or reconnect")
                else:
                    error = RequestTimedOut(
                        f"MCP server {name!r} did not finish setup within {conn.config.request_timeout_ms} ms"
                        + conn.transport.note()
                    )
        except Exception as exc:  # noqa: BLE001 - every failure becomes a latched, safe error
            error = await self._setup_error(conn, first_error(exc))
        finally:
            conn.client = None
            conn.transport.release()
            if not conn.ready.is_set():
                error = error and with_words(error, conn.transport)
                self._publish(conn, state="failed", error=self._restarts.failed(name, error) if conn.restart else error)
                conn.ready.set()
            elif conn.snapshot.state == "connected":
                self._publish(conn, state="closed" if self._closed else "idle")
            conn.done.set()

    async def _open(self, stack: AsyncExitStack, conn: _Connection) -> Client:
        config = conn.config
        mode = config.protocol_version  # the SDK's own names: auto, legacy or a pinned version
        assert conn.group is not None
        name = conn.snapshot.server
        elicit = self._elicitation(name) if config.elicitation and self._elicitation else None
        sample = self._sampling(name, config.sampling) if config.sampling and self._sampling else None
        conn.lister = ToolLister(name, config, conn.group, lambda cursor: self._request(
            name, "tools/list", lambda client: client.list_tools(cursor=cursor), conn),
            lambda tools, filtered: self._listed(conn, tools, filtered), lambda: self._drop_cache(name))
        conn.lister.listeners = self.notice_listeners
        conn.log = ServerLog(name)
        factory = client_factory(config, asked_by(name, elicit), asked_by(name, sample),
                                 asked_by(name, self._roots.callback(config)), conn.lister.on_message, conn.log,
                                 [self.tasks.extension(name)] if config.tasks else [])
        client = await conn.transport.connect(stack, conn.group, factory, mode)
        if conn.transport.pid is not None:
            self._publish(conn, pid=conn.transport.pid)
        if mode == MODERN_VERSION:
            await verify_modern(client, conn.snapshot.server)
        if client.protocol_version == MODERN_VERSION:
            await conn.group.start(watch_changes, client)
        return client

    async def _http_auth(self, name: str, config: ServerConfig) -> httpx2.Auth | None:
        """The auth of a connection to an HTTP server; AuthRequired when it needs some this host lacks."""
        assert isinstance(config, HttpServer)
        if config.auth is None:
            return None
        if self._auth is None:
            raise AuthRequired(
                f"MCP server {name!r} uses {config.auth} authentication, "
                "but authentication support is not configured in this host"
            )
        return await self._auth.http_auth(name, config)

    async def _setup_error(self, conn: _Connection, exc: BaseException) -> McpError:
        """Map a setup failure to a fixed, safe message (never the raw server text)."""
        from mcp import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        name, transport = conn.snapshot.server, conn.transport
        if transport.refusal is not None:
            return ConnectFailed(f"MCP server {name!r} setup failed: {transport.refusal}")
        if transport.challenges and transport.statuses and not isinstance(exc, (AuthRequired, AuthError)):
            with anyio.CancelScope() as conn.scope:  # a close stops the wait for the link
                return await self._challenge_error(conn)
            return ConnectFailed(f"setup of MCP server {name!r} was stopped by shutdown or reconnect")
        known = transport.setup_error(name, exc)
        if known is not None:
            return known
        if isinstance(exc, McpError):
            return exc
        if isinstance(exc, MCPError):
            if exc.code == CONNECTION_CLOSED:
                return ConnectFailed(f"MCP server {name!r} closed the connection during setup"
                                     + conn.transport.note())
            if exc.code == REQUEST_TIMEOUT:
                return RequestTimedOut(f"MCP server {name!r} did not answer during setup")
            return ConnectFailed(f"MCP server {name!r} refused setup: {one_line(exc.message, SERVER_TEXT_LIMIT)}")
        if isinstance(exc, OSError):
            return ConnectFailed(f"MCP server {name!r} could not be started ({type(exc).__name__})")
        return ConnectFailed(f"MCP server {name!r} setup failed ({type(exc).__name__})" + conn.transport.note())

    async def _challenge_error(self, conn: _Connection) -> McpError:
        """The server asked for credentials: say whether none are configured, a sign-in is
        needed (with the link of the sign-in the challenge started) or they were rejected."""
        name, config, seen = conn.snapshot.server, conn.config, conn.transport.challenge
        assert isinstance(config, HttpServer)
        if config.auth is None:
            return AuthRequired(f'MCP server {name!r} requires authentication ({seen}), but no "auth" is '
                                'configured for it; add "auth" to its configuration')
        try:
            link = await self._auth.pending_link(name, config) if self._auth is not None else None
        except AuthError as failed:  # the sign-in the challenge started failed: that is the news
            return failed
        if link is not None:
            need = "sign-in" if seen == "HTTP 401" else "a sign-in with more access"
            return AuthRequired(f"MCP server {name!r} needs {need} ({seen}): open this link to authorize "
                                f"hostlink: {link}", link)
        from hostlink.mcp.auth.signin import sign_in_refusal

        if sign_in_refusal(name, config) is None:  # a sign-in by link whose tokens were refused
            return AuthError(f"MCP server {name!r} rejected the stored sign-in ({seen}); sign in again with "
                             f'`{self._command} mcp auth {name}` or the mcp tool\'s action "auth"')
        return AuthError(f"MCP server {name!r} rejected the configured credentials ({seen})")

    # --- requests ----------------------------------------------------------------------

    async def _request(self, name: str, what: str, send: Callable[[Client], Awaitable[T]],
                       conn: _Connection | None = None) -> T:
        """Send one request (on `conn`, or the current connection); map SDK failures to safe
        errors. No retry, no dedup."""
        from mcp import MCPError
        from mcp_types import CONNECTION_CLOSED, MISSING_REQUIRED_CLIENT_CAPABILITY, REQUEST_TIMEOUT
        from pydantic import ValidationError

        conn = conn or await self._ready(name)
        client = conn.client
        if client is None:
            raise ConnectFailed(f"MCP server {name!r} is not connected")
        transport = conn.transport
        challenges, refusals = transport.challenges, transport.refusals
        started = anyio.current_time()
        try:
            return await send(client)
        except MCPError as exc:
            if transport.challenges != challenges:  # the server asked for credentials meanwhile
                raise await self._challenge_error(conn) from None
            if transport.refusals != refusals and exc.code != CONNECTION_CLOSED:
                raise CallFailed(f"MCP server {name!r}: {what} failed: {transport.refusal}") from None
            # A server may answer with the codes the SDK uses for its own transport state:
            # what happened decides, not the code.
            if exc.code == CONNECTION_CLOSED and (transport.ended or conn.closing.is_set()):
                raise await self._lost(conn, what) from None
            timeout = conn.config.request_timeout_ms / 1000
            if exc.code == REQUEST_TIMEOUT and anyio.current_time() - started >= timeout * TIMEOUT_SHARE:
                raise RequestTimedOut(
                    f"MCP server {name!r} did not answer {what} within {conn.config.request_timeout_ms} ms"
                ) from None
            if exc.code == MISSING_REQUIRED_CLIENT_CAPABILITY:
                raise CallFailed(tasks_needed(name, conn.config, what, client.protocol_version)) from None
            reason = one_line(exc.message, SERVER_TEXT_LIMIT)
            raise CallFailed(f"MCP server {name!r} rejected {what}: {reason}").with_rpc_code(exc.code) from None
        except ValidationError:
            raise CallFailed(f"MCP server {name!r} sent an invalid result for {what}") from None
        except RuntimeError as exc:
            if "structured content" in str(exc) or "schema" in str(exc):
                raise CallFailed(f"MCP server {name!r} sent a result for {what} that does not match "
                                 "the tool's output schema") from None
            raise CallFailed(f"MCP server {name!r}: {what} failed ({type(exc).__name__})") from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            raise await self._lost(conn, what) from None

    async def _lost(self, conn: _Connection, what: str) -> McpError:
        """The connection died under a request: latched as failed until reconnect, unless hostlink closed it."""
        name = conn.snapshot.server
        if conn.closing.is_set() and conn.snapshot.state != "failed":
            return ConnectFailed(f"{what} on MCP server {name!r} was stopped by a disconnect, reconnect or shutdown")
        await conn.transport.settle()
        if conn.snapshot.state == "failed" and conn.snapshot.error is not None:
            return conn.snapshot.error  # a sibling already latched it
        refusal = conn.transport.refusal
        cause = (f": {refusal}" if refusal is not None
                 else f" closed the connection during {what}" + conn.transport.note())
        error = with_words(ConnectFailed(f"MCP server {name!r}{cause}"), conn.transport)
        if conn.snapshot.state == "connected":
            error = self._restarts.crashed(name, error)  # "use reconnect", or when it restarts
            self._publish(conn, state="failed", error=error)
            conn.closing.set()
        return error

    async def list_tools(self, name: str, *, refresh: bool = True) -> tuple[Tool, ...]:
        """The tools the server advertises, less what its tool filters hide; shared in flight."""
        conn = await self._ready(name)
        assert conn.lister is not None
        return await conn.lister.tools_now(refresh)

    async def search_tools(self, name: str) -> tuple[Any, ...]:
        """The tools for a search: a live listing when connected, else the cached one of a
        server with `cacheTools` (no process started, no request sent), else a live one."""
        conn, config = self._conns.get(name), self.config(name)
        if (conn is None or conn.snapshot.state == "idle") and self._cache is not None and config.cache_tools:
            cached = self._cache.load(name, config)
            if cached is not None:
                return cached
        return await self.list_tools(name)

    def _listed(self, conn: _Connection, tools: tuple[Tool, ...], filtered: tuple[int, int]) -> None:
        self._publish(conn, tools=tools, filtered=filtered)
        if self._cache is not None and conn.config.cache_tools:
            self._cache.store(conn.snapshot.server, conn.config, tools)

    def _drop_cache(self, name: str) -> None:
        if self._cache is not None:
            self._cache.drop(name)

    async def call_tool(self, name: str, tool: str, arguments: dict[str, Any]) -> Any:
        conn = await self._ready(name)
        ms = conn.config.tool_timeout_ms  # a wait that each progress notification restarts
        try:
            return await self._request(name, f"the call of tool {tool!r}",
                                       lambda client: call_with_progress(
                                           client, name, tool, arguments, ms, log=conn.log,
                                           send=self.tasks.sender(name, client, tool, self.list_tools)), conn)
        except TaskPending as pending:  # the call outlived its wait: the model gets a handle
            return pending.handle.result()

    async def on_client(self, name: str, what: str, work: Callable[[Client, anyio.abc.TaskGroup], Awaitable[T]]) -> T:
        """`work(client, its owner's task group)` as one request `what`: for protocol steps
        kept in modules of their own (resource subscriptions); failures mapped as for any request."""
        conn = await self._ready(name)
        return await self._request(name, what, lambda client: work(client, conn.group), conn)  # type: ignore[arg-type]

    async def list_resources(self, name: str, cursor: str | None = None) -> Any:
        return await self._request(name, "resources/list", lambda client: client.list_resources(cursor=cursor))

    async def list_resource_templates(self, name: str, cursor: str | None = None) -> Any:
        return await self._request(name, "resources/templates/list",
                                   lambda client: client.list_resource_templates(cursor=cursor))

    async def read_resource(self, name: str, uri: str) -> Any:
        return await self._request(name, "resources/read", lambda client: client.read_resource(uri))

    async def list_prompts(self, name: str, cursor: str | None = None) -> Any:
        return await self._request(name, "prompts/list", lambda client: client.list_prompts(cursor=cursor))

    async def get_prompt(self, name: str, prompt: str, arguments: dict[str, str]) -> Any:
        return await self._request(name, f"prompt {prompt!r}",
                                   lambda client: client.get_prompt(prompt, arguments or None))

    async def complete(self, name: str, ref: Any, argument: str, value: str,
                       context: dict[str, str] | None = None) -> Any:
        return await self._request(name, "completion/complete",
                                   lambda client: client.complete(ref, {"name": argument, "value": value},
                                                                  context or None))

    # --- teardown ----------------------------------------------------------------------

    async def disconnect(self, name: str) -> Snapshot:
        """Close the client; a latched failure stays latched."""
        self.config(name)
        conn = self._conns.get(name)
        if conn is not None:
            latched = conn.snapshot.state == "failed"
            await self._close(conn)
            if not latched and self._conns.get(name) is conn:
                del self._conns[name]
        return self.snapshot(name)

    async def reconnect(self, name: str) -> Snapshot:
        """Close the client and reset to idle, clearing a latched failure. Never connects."""
        self.config(name)
        self._drop_cache(name)
        self._restarts.reconnected(name)
        conn = self._conns.pop(name, None)
        if conn is not None:
            await self._close(conn)
        return self.snapshot(name)

    async def reconfigure(self, servers: Mapping[str, ServerConfig], broken: Mapping[str, str], *,
                          auth: AuthManager | None = None, cache: ToolCache | None = None) -> dict[str, list[str]]:
        """Take a reloaded configuration: a server whose entry changed or went away is reset
        (connection closed, cached listing dropped), every other one keeps its connection.
        `auth` and `cache` are used when the runtime had none. Returns the names added,
        changed and removed."""
        changes: dict[str, list[str]] = {"added": [], "changed": [], "removed": []}
        reset = []
        for name in sorted({*self._servers, *self._broken, *servers, *broken}):
            before = (self._servers.get(name), self._broken.get(name))
            after = (servers.get(name), broken.get(name))
            if before == after:
                continue
            kind = "added" if before == (None, None) else "removed" if after == (None, None) else "changed"
            changes[kind].append(name)
            self._drop_cache(name)
            self._restarts.forget(name)
            if name in self._conns:
                reset.append(self._conns.pop(name))
        self._servers, self._broken = dict(servers), dict(broken)
        self._auth, self._cache = self._auth or auth, self._cache or cache
        async with anyio.create_task_group() as group:
            for conn in reset:
                group.start_soon(self._close, conn)
        return changes

    async def _close(self, conn: _Connection) -> None:
        conn.closing.set()
        if conn.scope is not None and not conn.ready.is_set():
            conn.scope.cancel()  # bound a setup in flight by the close
        if conn.task is not None:
            with anyio.CancelScope(shield=True):
                await conn.done.wait()

    async def aclose(self) -> None:
        """Close every client (in parallel) and stop every server process."""
        await self.tasks.aclose()  # what the session left running, while its connections are up
        self._closed = True
        conns = list(self._conns.values())
        async with anyio.create_task_group() as group:
            for conn in conns:
                group.start_soon(self._close, conn)
        for conn in conns:
            if conn.snapshot.state in ("idle", "connected", "connecting"):
                self._publish(conn, state="closed")
