"""`hostlink mcp …` (and `llm mcp …`): the configured MCP servers from a terminal or script.

Each command is its own short host session: it reads the configuration, drives the MCP
extension through `HostSession` (the `mcp` tool for calls,
the `/mcp` command for the lines a person reads) and tears everything down. Importing this
module stays cheap: the SDK, keyring and httpx2 load only inside the commands that talk to a
server, so `hostlink mcp status` never pays for them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from hostlink.cli.mcp.session import load, trust_option, verbose, verbose_option, with_server
from hostlink.cli.session import command_path

if TYPE_CHECKING:
    from hostlink.host.session import HostSession
    from hostlink.mcp import LoadedConfig, McpExtension


@click.group(name="mcp")
@trust_option
@verbose_option
@click.pass_context
def mcp_group(ctx: click.Context) -> None:
    """Inspect and use the configured MCP servers."""
    import os

    from hostlink.host.trust import project_trust

    decided = project_trust(Path.cwd(), os.environ, flag=bool((ctx.obj or {}).get("trust_project")))
    ctx.obj = {**(ctx.obj or {}), "trust_project": decided.trusted, "trust_note": decided.note}


def _echo_json(value: Any) -> None:
    from hostlink.host.output import compact_json

    click.echo(compact_json(value))


async def _command(host: HostSession, *argv: str) -> str:
    from hostlink.host import CancelSignal

    context = click.get_current_context()
    return await host.run_command("mcp", (*argv, "--verbose") if verbose(context) else argv, CancelSignal())


@mcp_group.command()
@click.option("--json", "as_json", is_flag=True, help="A JSON array with one object per server.")
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """List the configured servers (never connects)."""
    from hostlink.mcp import filter_note, status_rows, table

    loaded = load(ctx)
    credentials = _credential_states(loaded)
    if as_json:
        _echo_json([_status_entry(loaded, credentials, name) for name in sorted([*loaded.servers, *loaded.broken])])
        return
    if not loaded.servers and not loaded.broken:
        click.echo(_nothing_configured(ctx))
        return
    click.echo(table(status_rows(loaded.servers, loaded.sources, credentials, loaded.broken)))
    for name in sorted(loaded.broken):
        click.echo(f"{name}: misconfigured: {loaded.broken[name]}")
    for name, config in sorted(loaded.servers.items()):
        note = filter_note(name, config)
        if note is not None:
            click.echo(f"{note}; `{command_path()} connect {name}` counts the tools they hide")


def _status_entry(loaded: LoadedConfig, credentials: dict[str, str], name: str) -> dict[str, Any]:
    from hostlink.mcp import transport_of

    config = loaded.servers.get(name)
    entry: dict[str, Any] = {"name": name, "source": str(loaded.sources.get(name, ""))}
    if config is None:
        return {**entry, "transport": None, "disabled": None, "credentials": None, "error": loaded.broken[name]}
    return {**entry, "transport": transport_of(config), "disabled": config.disabled,
            "credentials": credentials.get(name), "error": None}


def _nothing_configured(ctx: click.Context) -> str:
    """Where a configuration goes, for a person who has none yet."""
    import os

    from hostlink.mcp import project_config_files, user_config_files

    files = [str(path) for path in user_config_files(os.environ)]
    project = [str(path) for path in project_config_files(Path.cwd())]
    trust = "" if ctx.obj["trust_project"] else " (read only with --trust-project)"
    return ("no MCP servers are configured; add them to " + " or ".join(files)
            + f", or to the project's {' or '.join(project)}{trust}, as "
            + '{"mcpServers": {"NAME": {"command": "…", "args": […]}}} (see the README)')


def _credential_states(loaded: LoadedConfig) -> dict[str, str]:
    """Each authenticated server's credential state, never a connection and no host session:
    the environment answers for a credential taken from it, the keyring (alone, without the
    MCP runtime or httpx2) for a sign-in by link."""
    import os

    from hostlink.host.output import one_line

    states: dict[str, str] = {}
    linked = {}
    for name, config in loaded.servers.items():
        if config.transport == "http" and config.auth and not config.disabled:
            state = config.env_credential_state(os.environ)
            if state is None:
                linked[name] = config
            else:
                states[name] = one_line(state, 60)
    if not linked:
        return states
    import anyio

    from hostlink.mcp import SecureStore, record_key, stored_state

    async def ask() -> None:
        store = SecureStore()
        for name, config in linked.items():
            try:
                states[name] = one_line(await stored_state(store, record_key(name, config), name, config), 60)
            except Exception as exc:  # noqa: BLE001 - one server's store error is shown, not fatal
                states[name] = f"unknown ({type(exc).__name__})"

    anyio.run(ask)
    return states


@mcp_group.command()
@click.argument("server")
@click.option("--json", "as_json", is_flag=True, help="The tools as JSON, with input schemas.")
@click.option("--offset", default=0, type=click.IntRange(0), help="With --json: skip this many tools.")
@click.option("--cached", is_flag=True, help='From the tool cache of a server with "cacheTools": starts no server.')
@verbose_option
@click.pass_context
def tools(ctx: click.Context, server: str, as_json: bool, offset: int, cached: bool) -> None:
    """List the tools SERVER offers to the model."""
    if cached:
        from hostlink.cli.mcp.cached import cached_tools

        stored = cached_tools(load(ctx), server)
        if not as_json:
            from hostlink.mcp import tool_line

            click.echo("\n".join(tool_line(tool) for tool in stored) or f"{server}: no tools")
            return
        listed = [{"name": t.name, "title": t.title, "description": t.description, "inputSchema": t.input_schema}
                  for t in stored]
    else:
        listed = with_server(ctx, server, _listing(server, as_json))
    if not as_json:
        click.echo(listed)
        return
    from hostlink.cli.mcp.listing import bounded_json_entries

    entries, footer = bounded_json_entries(listed, offset)
    _echo_json(entries)
    if footer:
        click.echo(f"{command_path()}: {footer}", err=True)


def _listing(server: str, as_json: bool) -> Any:
    async def listing(extension: McpExtension, host: HostSession) -> Any:
        from hostlink.mcp import model_visible

        if not as_json:
            return await _command(host, "tools", server)
        assert extension.runtime is not None
        tools = await extension.runtime.list_tools(server)
        tasks = extension.runtime.snapshot(server).task_tools
        return [_tool_entry(t) for t in tools if model_visible(t, tasks)]

    return listing


def _tool_entry(tool: Any) -> dict[str, Any]:
    """A tool as `tools --json` shows it: the MCP fields a script needs, sanitized."""
    import json

    from hostlink.host.output import compact_json
    from hostlink.mcp import task_mark

    entry = {"name": tool.name, "task": task_mark(tool), "title": tool.title, "description": tool.description,
             "inputSchema": tool.input_schema, "outputSchema": tool.output_schema,
             "annotations": tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else None}
    plain: dict[str, Any] = json.loads(compact_json(entry))
    return plain


@mcp_group.command()
@click.argument("server")
@click.option("--json", "as_json", is_flag=True, help="The connection snapshot as JSON.")
@verbose_option
@click.pass_context
def connect(ctx: click.Context, server: str, as_json: bool) -> None:
    """Connect to SERVER, list its tools and report the connection."""
    async def connected(extension: McpExtension, host: HostSession) -> Any:
        from hostlink.host.output import one_line
        from hostlink.mcp import model_visible

        line = await _command(host, "connect", server)
        if not as_json:
            return line
        assert extension.runtime is not None
        snapshot = extension.runtime.snapshot(server)
        return {"name": server, "state": snapshot.state, "protocolVersion": one_line(snapshot.protocol_version, 64),
                "serverName": one_line(snapshot.server_name, 200),
                "serverVersion": one_line(snapshot.server_version, 100),
                "tools": sum(1 for tool in snapshot.tools or () if model_visible(tool, snapshot.task_tools))}

    shown = with_server(ctx, server, connected)
    _echo_json(shown) if as_json else click.echo(shown)


async def _nothing(extension: McpExtension, host: HostSession) -> None:
    return None


@mcp_group.command()
@click.argument("server")
@click.pass_context
def disconnect(ctx: click.Context, server: str) -> None:
    """Close SERVER's connection (each hostlink command has its own; this one has none open)."""
    _explain(ctx, server, "idle (not connected in this process)")


@mcp_group.command()
@click.argument("server")
@click.pass_context
def reconnect(ctx: click.Context, server: str) -> None:
    """Reset SERVER to idle, clearing a failed setup and its cached tool listing; never starts
    authorization. The same reset as `/mcp reconnect` and the `mcp` tool's action reconnect."""
    click.echo(with_server(ctx, server, lambda extension, host: _command(host, "reconnect", server)))


def _explain(ctx: click.Context, server: str, state: str) -> None:
    """What a connection verb means in a one-shot command, once SERVER is checked."""
    with_server(ctx, server, _nothing)
    click.echo(f"{server}: {state}")


from hostlink.cli.mcp.auth import auth_command, logout_command  # noqa: E402 - cheap: click only
from hostlink.cli.mcp.call import call  # noqa: E402 - cheap: click only
from hostlink.cli.mcp.config import add_command, add_json_command, get_command, remove_command  # noqa: E402
from hostlink.cli.mcp.importer import import_command  # noqa: E402
from hostlink.cli.mcp.registry import search_command  # noqa: E402 - cheap: click only
from hostlink.cli.mcp.reload import reload_command  # noqa: E402 - cheap: click only
from hostlink.cli.mcp.resources import prompt_command, prompts_command, read_command, resources_command  # noqa: E402
from hostlink.cli.mcp.serve import serve_command  # noqa: E402 - cheap: click only
from hostlink.cli.mcp.task import task_command  # noqa: E402 - cheap: click only
from hostlink.cli.mcp.trust import trust_command, untrust_command  # noqa: E402

for command in (call, task_command, auth_command, logout_command, add_command, add_json_command, remove_command,
                get_command, import_command, trust_command, untrust_command, serve_command, resources_command,
                read_command, prompts_command, prompt_command, search_command, reload_command):
    mcp_group.add_command(command)
from hostlink.cli.mcp.schema import schema_command  # noqa: E402 - cheap: click only

mcp_group.add_command(schema_command)
for command in mcp_group.commands.values():  # --trust-project after any subcommand too
    trust_option(command)
