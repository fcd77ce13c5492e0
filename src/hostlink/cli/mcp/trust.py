"""`hostlink mcp trust [DIR]` / `untrust [DIR]`: trust a project until its MCP files change.

The record (the project's real path and a digest of its MCP files) goes to the user's config
area; hosts honour it while the files stay as they were (see `hostlink.host.trust`).
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from hostlink.cli.session import Fail, command_path

DIR_ARGUMENT = click.argument("directory", required=False,
                              type=click.Path(exists=True, file_okay=False, path_type=Path))


def _project(directory: Path | None) -> Path:
    from hostlink.host.trust import find_project

    return find_project(directory or Path.cwd())


def _failure(exc: Exception, outcome: str) -> Fail:
    """A records problem as one line that says nothing was changed."""
    from hostlink.host.trust import TrustRecordsError, records_file

    if isinstance(exc, TrustRecordsError):
        return Fail(f"{exc}; {outcome}", "error")
    strerror = getattr(exc, "strerror", None) or type(exc).__name__
    return Fail(f"cannot write {_shown(records_file(os.environ))} ({strerror}); {outcome}", "error")


def _shown(path: Path) -> str:
    return str(path) if str(path).isprintable() else ascii(str(path))


@click.command(name="trust")
@DIR_ARGUMENT
def trust_command(directory: Path | None) -> None:
    """Trust the project of DIR (default: the working directory) until its MCP files change."""
    from hostlink.host.trust import PROJECT_FILES, TrustRecordsError, trust

    project = _project(directory)
    try:
        trust(project, os.environ)
    except (TrustRecordsError, OSError) as exc:
        raise _failure(exc, "nothing was recorded") from None
    present = [name for name in PROJECT_FILES if (project / name).exists()]
    files = ", ".join(present) if present else f"none yet ({' or '.join(PROJECT_FILES)})"
    click.echo(f"trusted {_shown(Path(os.path.realpath(project)))} with its MCP files as they are now: {files}; "
               f"any change to them makes it untrusted again (`{command_path()} trust` after reviewing it)")


@click.command(name="untrust")
@DIR_ARGUMENT
def untrust_command(directory: Path | None) -> None:
    """Forget the trust of the project of DIR (default: the working directory)."""
    from hostlink.host.trust import TrustRecordsError, untrust

    project = _project(directory)
    try:
        removed = untrust(project, os.environ)
    except (TrustRecordsError, OSError) as exc:
        raise _failure(exc, "nothing was changed") from None
    real = _shown(Path(os.path.realpath(project)))
    click.echo(f"{real}: no longer trusted" if removed else f"{real}: was not trusted")
