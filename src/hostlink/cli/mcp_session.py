"""What every ``mcp`` subcommand does first: read the configuration, check the server, and
run in a host session over the MCP extension."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click

from hostlink.cli.session import Fail, command_path, run_session

if TYPE_CHECKING:
    from hostlink.host.session import HostSession
    from hostlink.mcp.config import LoadedConfig
    from hostlink.mcp.extension import McpExtension

T = TypeVar("T")


def load(ctx: click.Context) -> LoadedConfig:
    """The configuration this command sees; a broken file is the command's one-line failure."""
    from hostlink.mcp.config import ConfigError, load_config

    try:
        loaded = load_config(Path.cwd(), bool(ctx.obj["trust_project"]))
    except ConfigError as exc:
        raise Fail(f"invalid MCP configuration: {exc}") from None
    if loaded.ignored_project_servers:
        click.echo(f"{command_path()}: ignored servers of the untrusted project (use --trust-project): "
                   + ", ".join(loaded.ignored_project_servers), err=True)
    return loaded


def with_server(ctx: click.Context, server: str,
                work: Callable[[McpExtension, HostSession], Awaitable[T]]) -> T:
    """Run ``work(extension, host)`` in a host session over the configured servers, after
    checking that SERVER is configured and enabled."""
    from hostlink.mcp.errors import McpError
    from hostlink.mcp.extension import McpExtension
    from hostlink.mcp.runtime import enabled_config

    loaded = load(ctx)
    extension = McpExtension(servers=loaded.servers)

    async def checked(host: HostSession) -> T:
        enabled_config(loaded.servers, server, loaded.sources.get(server))  # the one check, naming the file
        return await work(extension, host)

    return run_session([extension], checked, trusted=bool(ctx.obj["trust_project"]), shown=(McpError,))
