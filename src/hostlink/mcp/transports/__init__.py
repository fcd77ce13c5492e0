"""What differs between the MCP transports, behind one interface the runtime uses.

A configuration names its transport (`config.transport`: `"stdio"` or `"http"`);
`open_transport` makes one connection generation's `Transport` for it, which
opens the SDK client (`client_factory`) over its own SDK transport. The stdio module
reads the child's stderr and finds its pid; the http module holds the httpx2 client, its auth
and the `SafeTransport` under every request. Importing
this package is cheap: the SDK and httpx2 load only when a server is opened.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any, Literal, Protocol

from hostlink.mcp.errors import ConnectFailed, McpError

if TYPE_CHECKING:
    import anyio
    import anyio.abc
    import httpx2
    from mcp import Client
    from mcp.client.session import MessageHandlerFnT

    from hostlink.mcp.config.schema import ServerConfig

MODERN_VERSION = "2026-07-28"


class Transport(Protocol):
    """One connection generation's transport, as the runtime sees it.

    Everything below is read-only to the runtime: each transport derives it from what it holds
    (the pipes, the SafeTransport), so the protocol declares properties, not settable fields.
    """

    @property
    def name(self) -> Literal["stdio", "http"]: ...
    @property
    def pid(self) -> int | None:
        """The server process, once connected, when it could be identified."""
    @property
    def refusal(self) -> McpError | None:
        """The last request the transport refused, and why."""
    @property
    def refusals(self) -> int: ...
    @property
    def ended(self) -> bool:
        """The connection to the server has ended (stdout closed, the HTTP transport stopped)."""
    @property
    def challenges(self) -> int:
        """Answers that asked for credentials, ever."""
    @property
    def challenge(self) -> str:
        """How the last one read."""
    @property
    def statuses(self) -> Sequence[int]:
        """Error statuses seen during setup."""

    async def connect(self, stack: AsyncExitStack, group: anyio.abc.TaskGroup,
                      client_for: Callable[[Any, str], Client], mode: str) -> Client:
        """Open the SDK client (`client_for(sdk_transport, mode)`) inside `stack`."""

    async def abandon(self) -> None:
        """The setup did not finish: collect what the error message needs."""

    async def settle(self) -> None:
        """The connection died: give the server a moment to say why."""

    def release(self) -> None:
        """The owner is done: free what the transport holds outside `stack`."""

    def note(self) -> str:
        """A classified suffix for an error message (`": …"`), or `""`."""

    def said(self) -> str | None:
        """What the server itself said (sanitized, bounded), for a person only; or None."""

    def setup_error(self, name: str, exc: BaseException) -> McpError | None:
        """A setup failure only this transport has, as a safe error; None otherwise."""


def with_words(error: McpError, transport: Transport) -> McpError:
    """`error` with what the server said about it attached as `detail` (for a person)."""
    said = transport.said()
    if said and error.detail is None:
        error.detail = said
    return error


def open_transport(config: ServerConfig, *, auth: Callable[[], Awaitable[httpx2.Auth | None]],
                   ready: anyio.Event) -> Transport:
    """The transport of one connection generation (nothing is opened yet).

    `auth` gives an HTTP connection its auth; `ready` is set when the setup is done.
    """
    if config.transport == "stdio":
        from hostlink.mcp.transports.stdio import StdioTransport

        return StdioTransport(config)
    from hostlink.mcp.transports.http import HttpTransport

    return HttpTransport(config, auth, ready)


def client_factory(config: ServerConfig, elicit: Any = None, sample: Any = None, list_roots: Any = None,
                   on_message: MessageHandlerFnT | None = None, on_log: Any = None,
                   extensions: Sequence[Any] = ()) -> Callable[[Any, str], Client]:
    """`client_for(sdk_transport, mode)`: the SDK client hostlink opens for `config`.

    `elicit`, `sample` and `list_roots` (the SDK's elicitation, sampling and roots
    callbacks) are given only for a server that opted in, in a host that can ask (roots: in a
    trusted project): the SDK advertises a capability exactly when it has its callback.
    `on_message` hears the server's notifications (list changes), `on_log` its log messages;
    `extensions` are the SDK client extensions of a server that opted in (tasks)."""
    from mcp import Client
    from mcp_types import Implementation

    from hostlink import installed_version

    timeout = config.request_timeout_ms / 1000

    def client_for(transport: Any, mode: str) -> Client:
        return Client(transport, mode=mode, read_timeout_seconds=timeout, elicitation_callback=elicit,
                      sampling_callback=sample, list_roots_callback=list_roots, message_handler=on_message,
                      logging_callback=on_log, extensions=list(extensions),
                      client_info=Implementation(name="hostlink", version=installed_version()))

    return client_for


async def verify_modern(client: Client, name: str) -> None:
    """A pinned modern client asks the server itself: a legacy-only server is refused."""
    from mcp import MCPError
    from mcp_types import DiscoverResult
    from pydantic import ValidationError

    try:
        raw = await client.session.send_discover(MODERN_VERSION)
        result = DiscoverResult.model_validate(raw)
    except (MCPError, ValidationError):
        result = None
    if result is None or MODERN_VERSION not in result.supported_versions:
        raise ConnectFailed(
            f"MCP server {name!r} does not support protocol {MODERN_VERSION}, which its configuration pins; "
            'set "protocolVersion" to "auto" or "legacy" to use an older server'
        )
    client.session.adopt(result)


def describe(client: Client, tasks: bool = False) -> dict[str, Any]:
    """What a connected client reports about its server, as the runtime's snapshot fields;
    `tasks`: the server's configuration has "tasks" on."""
    info = client.server_info
    caps = client.server_capabilities
    present = {key for key in ("tools", "resources", "prompts", "completions") if getattr(caps, key, None) is not None}
    tools_call = getattr(getattr(getattr(getattr(caps, "tasks", None), "requests", None), "tools", None), "call", None)
    runs = tasks and (client.protocol_version == MODERN_VERSION
                      or (client.protocol_version == "2025-11-25" and tools_call is not None))
    return {"protocol_version": client.protocol_version, "server_name": info.name if info else None,
            "server_version": info.version if info else None, "capabilities": frozenset(present), "error": None,
            "task_tools": runs}
