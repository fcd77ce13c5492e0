"""`hostlink mcp reload` (and `llm mcp reload`): what a reload would read, checked now.

No session of this command line outlives one command: each `hostlink mcp …` reads the
configuration when it starts and is gone when it ends, so there is nothing here to reload.
The hosts that live on reload there: `hostlink mcp serve` by itself within a second,
`hostlink serve` and the other host sessions with the `mcp` tool's action reload or
`/mcp reload`. What a person wants from this command after an edit is to know that those
hosts will take the files: it reads them as a reload does (never connecting) and says so,
or fails as the reload would (exit status 2, the previous configuration staying in use).
"""

from __future__ import annotations

import click

from hostlink.cli.mcp.session import load
from hostlink.cli.session import command_path


@click.command(name="reload")
@click.pass_context
def reload_command(ctx: click.Context) -> None:
    """Check the configuration files as a running host's reload reads them (never connects).
    Each hostlink command reads them when it starts; `hostlink mcp serve` follows them by
    itself; other host sessions reload with the mcp tool's action reload or `/mcp reload`."""
    loaded = load(ctx)
    names = sorted(loaded.servers)
    shown = f"{len(names)} server(s): {', '.join(names)}" if names else "no servers"
    click.echo(f"the MCP configuration reads: {shown}")
    for name in sorted(loaded.broken):
        click.echo(f"{name}: misconfigured: {loaded.broken[name]}")
    click.echo(f"each `{command_path()} …` command reads it when it starts; a running "
               "`hostlink mcp serve` takes it within a second by itself; other running hosts take it with "
               "the mcp tool's action reload or `/mcp reload`")
