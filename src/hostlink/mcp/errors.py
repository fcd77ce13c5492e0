"""Errors of the MCP client, shared by runtime, auth, tool and command.

Every message is built by hostlink from local facts (server name, a classified cause), never
copied from a server or an environment value, so it is safe to show to the model and the user.
"""

from __future__ import annotations


class McpError(Exception):
    """Base of every MCP client error; ``str(error)`` is safe to show."""


class ServerNotFound(McpError):
    """The named server is not in the loaded configuration."""


class ServerDisabled(McpError):
    """The named server is configured with ``disabled: true``."""


class ConnectFailed(McpError):
    """Connection setup failed; it stays failed until an explicit reconnect."""


class CallFailed(McpError):
    """A request on an established connection failed (not a tool's own ``isError``)."""


class RequestTimedOut(McpError):
    """A setup or request did not finish within the server's ``requestTimeoutMs``."""


class AuthRequired(McpError):
    """Credentials are missing; ``link`` is an authorization link for the user, if any."""

    def __init__(self, message: str, link: str | None = None) -> None:
        super().__init__(message)
        self.link = link


class AuthError(McpError):
    """Authentication failed for a reason other than missing credentials."""


def first_error(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups from task groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc
