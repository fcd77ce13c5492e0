"""One short host session per terminal command, shared by every command group.

A command builds its extensions, runs its work in a :class:`HostSession` (started in the
working directory, notices to stderr) and is gone: every connection closed and every server
stopped before the process exits, also on SIGTERM or SIGHUP. Failures are one line naming
the command of the host it runs in (``hostlink mcp: …`` or ``llm mcp: …``), exit status 1.
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


class Fail(click.ClickException):
    """A one-line explanation and exit code 1."""

    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.prefix = command_path()  # at raise time: click shows it after its context is gone

    def show(self, file: Any = None) -> None:
        click.echo(f"{self.prefix}: {self.message}", err=True)


def host_command() -> str:
    """How the person reached this command: ``hostlink`` or ``llm``."""
    context = click.get_current_context(silent=True)
    return context.find_root().info_name if context is not None and context.find_root().info_name else "hostlink"


def command_path() -> str:
    """``hostlink mcp`` / ``llm mcp``: the group this failure belongs to."""
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
                trusted: bool = False, lasting: bool = False,
                shown: tuple[type[Exception], ...] = ()) -> T:
    """Run ``work(host)`` in a started host session and always shut it down.

    The host's CommandFailed and the ``shown`` errors (an extension's, whose messages are
    safe to show) become :class:`Fail`; a termination signal exits 128 + its number.
    """
    import anyio

    from hostlink.host import CommandFailed
    from hostlink.host.session import HostSession, Terminated

    host = HostSession(extensions, command=host_command(), lasting=lasting)

    async def main() -> T:
        async def started() -> T:
            await host.start(cwd=Path.cwd(), project_trusted=trusted, notifier=StderrNotifier())
            return await work(host)

        return await host.run(started)

    try:
        return anyio.run(main)
    except (CommandFailed, *shown) as error:
        raise Fail(str(error)) from None
    except Terminated as stopped:
        click.echo(f"{command_path()}: {stopped}; every server it started was stopped", err=True)
        raise SystemExit(128 + stopped.signum) from None
