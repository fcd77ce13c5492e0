"""One short host session per terminal command, shared by every command group.

A command builds its extensions, runs its work in a `HostSession` (started in the
working directory, notices to stderr) and is gone: every connection closed and every server
stopped before the process exits, also on SIGTERM or SIGHUP. Failures are one line naming
the command of the host it runs in (`hostlink mcp: …` or `llm mcp: …`), perhaps followed
by what a server said, or with `--json` `{"error": {"code", "message"}}` on stdout; the
exit status says the kind (EXIT_CODES).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from hostlink.host import Extension
    from hostlink.host.session import HostSession

T = TypeVar("T")


# 0 ok, 1 a tool's own error (or another failure), 2 usage or configuration, 3 connection or
# server, 4 authentication needed; the keys are the codes of ``--json`` errors.
EXIT_CODES = {
    "tool_error": 1, "error": 1, "output_too_large": 1, "unknown_tool": 2,
    "usage": 2, "invalid_config": 2, "unknown_server": 2, "server_disabled": 2, "invalid_arguments": 2,
    "connection_failed": 3, "request_failed": 3, "timeout": 3,
    "auth_required": 4, "auth_failed": 4,
}


class Fail(click.ClickException):
    """A one-line explanation (then `words`, lines for a person), its code and exit status;
    under `--json` the error object on stdout instead."""

    def __init__(self, message: str, code: str = "usage", words: Sequence[str] = (), *, prefixed: bool = True) -> None:
        super().__init__(message)
        self.prefixed = prefixed  # False: the message is the mcp tool's answer, shown as it is
        self.code = code
        self.exit_code = EXIT_CODES.get(code, 1)  # type: ignore[misc]  # click types it ClassVar; reads it per error
        self.words = list(words)
        self.prefix = command_path()  # at raise time: click shows it after its context is gone
        self.as_json = json_requested()

    def show(self, file: Any = None) -> None:
        if self.as_json:
            from hostlink.host.output import compact_json

            first = self.message.split("\n", 1)[0]
            click.echo(compact_json({"error": {"code": self.code, "message": first}}))
            return
        first = f"{self.prefix}: {self.message}" if self.prefixed else self.message
        click.echo("\n".join([first, *self.words]), err=True)


def endpoint_key(token_env: str | None) -> str:
    """The key a loopback endpoint requires: from `$token_env` (at least 16 characters), else
    random (`hostlink serve`, `hostlink mcp serve --http`)."""
    import os
    import secrets

    if token_env is None:
        return secrets.token_urlsafe(32)
    token = os.environ.get(token_env, "")
    if len(token) < 16:
        raise Fail(f"--token-env {token_env}: the variable must hold a key of at least 16 characters")
    return token


def json_requested() -> bool:
    """Whether the running command was asked for `--json`."""
    context = click.get_current_context(silent=True)
    return bool(context is not None and context.params.get("as_json"))


def _code_of(error: BaseException) -> str:
    """The code of a failure an extension raised (a command's failure carries it as its cause)."""
    from hostlink.mcp import error_code

    cause = error.__cause__ if isinstance(error.__cause__, Exception) else error
    return error_code(cause)


def host_command() -> str:
    """How the person reached this command: `hostlink` or `llm`."""
    context = click.get_current_context(silent=True)
    return (context.find_root().info_name if context is not None else None) or "hostlink"


def command_path() -> str:
    """`hostlink mcp` / `llm mcp`: the group this failure belongs to."""
    context = click.get_current_context(silent=True)
    if context is None:
        return "hostlink"
    while context.parent is not None and context.parent.parent is not None:
        context = context.parent
    return context.command_path


class StderrNotifier:
    def notify(self, message: str, level: str = "info") -> None:
        from hostlink.host.output import strip_controls

        click.echo(f"{host_command()} {level}: {strip_controls(message)}", err=True)


def run_session(extensions: Sequence[Extension], work: Callable[[HostSession], Awaitable[T]], *,
                trusted: bool = False, lasting: bool = False, keep_output: bool = False,
                shown: tuple[type[Exception], ...] = ()) -> T:
    """Run `work(host)` in a started host session and always shut it down (`keep_output`:
    see `HostSession`).

    The host's CommandFailed and the `shown` errors (an extension's, whose messages are
    safe to show) become `Fail`; a termination signal exits 128 + its number
    (1 after a Windows console closed).
    """
    import anyio

    from hostlink.host import CommandFailed
    from hostlink.host.platform.console import exit_status
    from hostlink.host.session import HostSession, Terminated

    host = HostSession(extensions, command=host_command(), lasting=lasting, keep_output=keep_output)

    async def main() -> T:
        async def started() -> T:
            from hostlink.cli.terminal_ask import terminal_ask

            await host.start(cwd=Path.cwd(), project_trusted=trusted, notifier=StderrNotifier(), ask=terminal_ask())
            return await work(host)

        return await host.run(started)

    caught: tuple[type[Exception], ...] = (CommandFailed, *shown)
    try:
        return anyio.run(main)
    except caught as error:
        raise Fail(str(error), _code_of(error)) from None
    except Terminated as stopped:
        click.echo(f"{command_path()}: {stopped}; every server it started was stopped", err=True)
        raise SystemExit(exit_status(stopped.signum)) from None
