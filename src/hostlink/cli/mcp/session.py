"""What every `mcp` subcommand does first: read the configuration, check the server, and
run in a host session over the MCP extension."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from hostlink.cli.session import Fail, command_path, run_session

if TYPE_CHECKING:
    from hostlink.host.session import HostSession
    from hostlink.mcp import LoadedConfig, McpExtension

T = TypeVar("T")


def load(ctx: click.Context) -> LoadedConfig:
    """The configuration this command sees; a broken file is the command's one-line failure."""
    from hostlink.mcp import ConfigError, load_config

    try:
        loaded = load_config(Path.cwd(), bool(ctx.obj["trust_project"]))
    except ConfigError as exc:
        raise Fail(f"invalid MCP configuration: {exc}", "invalid_config") from None
    if loaded.ignored_project_servers:
        note = ctx.obj.get("trust_note")
        why = f"project, {note}; review them, then" if note else "untrusted project;"
        click.echo(f"{command_path()}: ignored servers of the {why} `{command_path()} trust` trusts it "
                   "(--trust-project: this once): " + ", ".join(loaded.ignored_project_servers), err=True)
    return loaded


def trust_option(command: Callable[..., T]) -> Callable[..., T]:
    """`--trust-project`: read the project's MCP files this time (as HOSTLINK_TRUST_PROJECT=1
    does); accepted before and after the subcommand."""
    def remember(ctx: click.Context, _: click.Parameter, value: bool) -> bool:
        if value:
            ctx.ensure_object(dict)["trust_project"] = True
            ctx.obj["trust_note"] = None
        return value

    return click.option("--trust-project", is_flag=True, expose_value=False, callback=remember,
                        help="Also read the project's .mcp.json / .hostlink/mcp.json this time "
                             "(env HOSTLINK_TRUST_PROJECT=1).")(command)


def verbose_option(command: Callable[..., T]) -> Callable[..., T]:
    """`--verbose`: after a failure, everything the server said (its whole bounded stderr
    tail), not only its last lines. Also accepted before the subcommand."""
    def remember(ctx: click.Context, _: click.Parameter, value: bool) -> bool:
        if value:
            ctx.ensure_object(dict)["verbose"] = True
        return value

    return click.option("--verbose", "-v", is_flag=True, expose_value=False, callback=remember,
                        help="After a failure, show everything the server said (its stderr tail).")(command)


def verbose(ctx: click.Context) -> bool:
    return bool(ctx.find_root().obj and ctx.find_root().obj.get("verbose")) or bool((ctx.obj or {}).get("verbose"))


def with_server(ctx: click.Context, server: str | None,
                work: Callable[[McpExtension, HostSession], Awaitable[T]], *, keep_output: bool = False) -> T:
    """Run `work(extension, host)` in a host session over the configured servers, after
    checking that SERVER is configured and enabled (None: a command over every server). A
    failure is its one line, then what the server said about it (for the person at the
    terminal). `keep_output`: see HostSession."""
    from hostlink.mcp import McpError, McpExtension, enabled_config, error_code, server_words

    loaded = load(ctx)
    extension = McpExtension(servers=loaded.servers, broken=loaded.broken)

    async def checked(host: HostSession) -> T:
        try:
            if server is not None:  # the one check, naming the file
                enabled_config(loaded.servers, server, loaded.sources.get(server), broken=loaded.broken)
            return await work(extension, host)
        except McpError as error:
            raise Fail(str(error), error_code(error), server_words(error, verbose=verbose(ctx))) from None

    return run_session([extension, *_models_for(loaded.servers)], checked, trusted=bool(ctx.obj["trust_project"]),
                       keep_output=keep_output)


def _models_for(servers: Any) -> list[Any]:
    """The model providers a server's sampling may name: the Claude Code provider, when some
    server has sampling configured (registering it starts nothing)."""
    if not any(config.sampling for config in servers.values()):
        return []
    from hostlink.claude_code import ClaudeCodeExtension

    return [ClaudeCodeExtension()]
