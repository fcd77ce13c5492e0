"""`hostlink mcp import --from PROGRAM` (and `llm mcp import`): take the servers another
MCP client already has.

It shows what would change first (added, already the same, not taken and why) and writes
only with `--yes` or after a yes on a terminal, in one checked, atomic write.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from hostlink.cli.mcp.config import LITERAL_OPTION, SCOPE_OPTION, open_target, warn, write
from hostlink.cli.session import Fail

# hostlink.mcp.config.importer.PROGRAMS, named here so that loading the mcp group stays cheap
SOURCES = ("claude-desktop", "claude-code", "cursor", "vscode", "windsurf", "gemini")


def _describe(entry: dict[str, Any]) -> str:
    """`stdio: npx (3 args)` / `http: https://host/path`: enough to recognise an entry,
    never its arguments, query or headers (they may hold secrets)."""
    from urllib.parse import urlsplit

    from hostlink.host.output import one_line

    if "command" in entry:
        count = len(entry.get("args") or [])
        return f"stdio: {one_line(str(entry['command']), 80)} ({count} arg{'' if count == 1 else 's'})"
    parts = urlsplit(str(entry.get("url", "")))
    return f"http: {one_line(f'{parts.scheme}://{parts.netloc}{parts.path}', 120)}"


@click.command(name="import")
@click.option("--from", "program", type=click.Choice(SOURCES), required=True,
              help="The program whose MCP servers to take.")
@click.option("--file", "path", type=click.Path(dir_okay=False, path_type=Path),
              help="Read this file (in that program's format) instead of its user and project configuration.")
@click.option("--dry-run", is_flag=True, help="Only show what would change.")
@click.option("--yes", "-y", is_flag=True, help="Write without asking.")
@SCOPE_OPTION
@LITERAL_OPTION
def import_command(program: str, path: Path | None, dry_run: bool, yes: bool, scope: str, literal: bool) -> None:
    """Import the MCP servers of Claude Desktop, Claude Code, Cursor, VS Code, Windsurf or the Gemini CLI.

    Reads the program's user configuration and, for VS Code, Cursor, the Gemini CLI and Claude
    Code, its project file in this directory (.vscode/mcp.json, .cursor/mcp.json,
    .gemini/settings.json, .mcp.json), whose entries replace the user file's.
    """
    from hostlink.mcp.config.edit import with_entries
    from hostlink.mcp.config.importer import PROGRAMS, ImportFailed, read_source, read_sources, source_path
    from hostlink.mcp.config.rules import safe_key

    try:
        if path is not None:
            found, sources = read_source(program, path, Path.cwd()), [path]
        else:  # the user file and the project's own
            found, sources = read_sources(program, source_path(program, os.environ), Path.cwd())
    except ImportFailed as exc:
        raise Fail(str(exc), "usage") from None
    source = " + ".join(map(str, sources))
    file = open_target(scope, locked=not dry_run)
    added, same, refused, warnings = _sort_entries(found, file, literal)
    click.echo(f"{PROGRAMS[program]} ({source}) -> {file.path}:")
    for name, entry in added.items():
        click.echo(f"  + {name}: {_describe(entry)}")
    for name in same:
        click.echo(f"  = {name}: already configured the same")
    for name, reason in refused.items():
        click.echo(f"  ! {safe_key(name)}: not imported: {reason}")
    warn(found.notes + warnings)
    if not added:
        click.echo("nothing to write")
        return
    if dry_run:
        click.echo("dry run: nothing written")
        return
    if not yes:
        if not (sys.stdin.isatty() and sys.stdout.isatty()):
            raise Fail("nothing written: confirm with --yes (there is no terminal to ask on)", "usage")
        if not click.confirm(f"write {len(added)} server{'s' if len(added) != 1 else ''} to {file.path}?"):
            click.echo("nothing written")
            return
    write(file, with_entries(file, added))
    click.echo(f"imported {len(added)} server{'s' if len(added) != 1 else ''} into {file.path}")


def _sort_entries(found: Any, file: Any, literal: bool) -> tuple[dict[str, dict[str, Any]], list[str], dict[str, str],
                                                               list[str]]:
    """The imported entries sorted: to add, already there the same, refused (with why), and
    the warnings of those to add."""
    from hostlink.mcp.config.edit import EditRefused, check_entry
    from hostlink.mcp.config.rules import NAME_PATTERN

    added: dict[str, dict[str, Any]] = {}
    same: list[str] = []
    refused = dict(found.refused)
    warnings: list[str] = []
    for name, entry in found.entries.items():
        if not NAME_PATTERN.fullmatch(name):
            refused[name] = "not a hostlink server name (1-64 of A-Z a-z 0-9 _ -)"
        elif file.servers.get(name) == entry:
            same.append(name)
        elif name in file.servers:
            refused[name] = f"{name!r} is already configured differently in {file.path}; remove it to take this one"
        else:
            try:
                warnings += check_entry(name, entry, file.path, os.environ, literal=literal)
                added[name] = entry
            except EditRefused as exc:
                refused[name] = str(exc)
    return added, same, refused, warnings
