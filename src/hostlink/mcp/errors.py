"""Errors of the MCP client, shared by runtime, auth, tool and command.

Every message is built by hostlink from local facts (server name, a classified cause), never
copied from a server or an environment value, so it is safe to show to the model and the user.
"""

from __future__ import annotations

from typing import Self


class McpError(Exception):
    """Base of every MCP client error; `str(error)` is safe to show.

    `detail` is what the server itself said about it (a stdio server's last stderr lines, a
    line it wrote that is not JSON-RPC), sanitized and bounded: for a person at a terminal
    only, never for the model.
    """

    detail: str | None = None
    rpc_code: int | None = None  # the JSON-RPC error code a server answered a request with, if any

    def with_rpc_code(self, code: int) -> Self:
        """This error, marked with the JSON-RPC code the server answered (for a caller that
        tells one refusal from another, like "Method not found")."""
        self.rpc_code = code
        return self


class ServerNotFound(McpError):
    """The named server is not in the loaded configuration."""


class ServerMisconfigured(McpError):
    """The named server's configuration entry cannot be used; the message says why."""


class ServerDisabled(McpError):
    """The named server is configured with `disabled: true`."""


class ConnectFailed(McpError):
    """Connection setup failed; it stays failed until an explicit reconnect."""


class CallFailed(McpError):
    """A request on an established connection failed (not a tool's own `isError`)."""


class RequestTimedOut(McpError):
    """A setup or request did not finish within the server's `requestTimeoutMs`."""


class AuthRequired(McpError):
    """Credentials are missing; `link` is an authorization link for the user, if any."""

    def __init__(self, message: str, link: str | None = None) -> None:
        super().__init__(message)
        self.link = link


class AuthError(McpError):
    """Authentication failed for a reason other than missing credentials."""


class InvalidArguments(McpError):
    """Arguments (of the `mcp` tool, or of the tool it calls) that do not match the schema."""


class UnknownTool(McpError):
    """The server does not offer the named tool (to the model)."""


# A stable, machine-readable name for each kind of failure (``--json`` errors, exit codes).
_CODES: tuple[tuple[type[McpError], str], ...] = (
    (ServerNotFound, "unknown_server"), (ServerMisconfigured, "invalid_config"), (ServerDisabled, "server_disabled"),
    (InvalidArguments, "invalid_arguments"), (UnknownTool, "unknown_tool"), (AuthRequired, "auth_required"),
    (AuthError, "auth_failed"),
    (RequestTimedOut, "timeout"), (ConnectFailed, "connection_failed"), (CallFailed, "request_failed"),
)


def error_code(error: BaseException) -> str:
    """The stable code of an MCP client error (`"error"` for any other)."""
    for kind, code in _CODES:
        if isinstance(error, kind):
            return code
    return "error"


def first_error(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups from task groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc
