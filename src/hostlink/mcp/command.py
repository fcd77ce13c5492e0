"""``hostlink mcp …``: inspect and use the configured MCP servers from a terminal or script.

Importing this module stays cheap: the SDK, keyring and httpx2 load only inside the commands
that talk to a server, so ``hostlink mcp status`` never pays for them. Each invocation is
its own short session: it reads the configuration, connects on demand and tears down.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

TRUST_HELP = "Also read the project's .mcp.json / .hostlink/mcp.json (env HOSTLINK_TRUST_PROJECT=1)."


class _Fail(click.ClickException):
    """A one-line explanation and exit code 1."""

    exit_code = 1

    def show(self, file: Any = None) -> None:
        click.echo(f"hostlink mcp: {self.message}", err=True)


@click.group(name="mcp")
@click.option("--trust-project", is_flag=True, envvar="HOSTLINK_TRUST_PROJECT", help=TRUST_HELP)
@click.pass_context
def mcp_group(ctx: click.Context, trust_project: bool) -> None:
    """Inspect and use the configured MCP servers."""
    ctx.obj = {"trust_project": trust_project}


def _load(ctx: click.Context):
    from hostlink.mcp.config import ConfigError, load_config

    try:
        loaded = load_config(Path.cwd(), bool(ctx.obj["trust_project"]))
    except ConfigError as exc:
        raise _Fail(f"invalid MCP configuration: {exc}") from None
    if loaded.ignored_project_servers:
        click.echo("hostlink mcp: ignored servers of the untrusted project (use --trust-project): "
                   + ", ".join(loaded.ignored_project_servers), err=True)
    return loaded


def _check_server(loaded: Any, name: str) -> None:
    config = loaded.servers.get(name)
    if config is None:
        known = ", ".join(sorted(loaded.servers)) or "none configured"
        raise _Fail(f"unknown MCP server {name!r} (known: {known})")
    if config.disabled:
        raise _Fail(f"MCP server {name!r} is disabled in {loaded.sources.get(name, 'its configuration')}")


def _with_runtime(loaded: Any, work: Any) -> Any:
    """Run ``work(runtime)`` in a fresh runtime and always tear it down.

    Output is bounded without overflow files: they would be removed when this process ends.
    """
    import anyio

    from hostlink.mcp.extension import default_auth
    from hostlink.mcp.runtime import McpRuntime

    async def main() -> Any:
        auth = default_auth(loaded.servers)
        runtime = McpRuntime(loaded.servers, auth=auth)
        try:
            return await work(runtime)
        finally:
            try:
                await runtime.aclose()
            finally:
                if auth is not None:
                    await auth.aclose()

    return anyio.run(main)


def _serve(ctx: click.Context, server: str, work: Any) -> Any:
    """Check SERVER, run ``work(runtime)``; an MCP error becomes the one-line failure."""
    from hostlink.mcp.errors import McpError

    loaded = _load(ctx)
    _check_server(loaded, server)
    try:
        return _with_runtime(loaded, work)
    except McpError as exc:
        raise _Fail(str(exc)) from None


def _echo_json(value: Any) -> None:
    from hostlink.host.output import compact_json

    click.echo(compact_json(value))


@mcp_group.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON object per server.")
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """List the configured servers (never connects)."""
    from hostlink.mcp import render

    loaded = _load(ctx)
    credentials = _credential_states(loaded)
    if as_json:
        _echo_json([{"name": name, "source": str(loaded.sources.get(name, "")),
                     "transport": render.transport_of(config), "disabled": config.disabled,
                     "credentials": credentials.get(name)} for name, config in sorted(loaded.servers.items())])
        return
    if not loaded.servers:
        click.echo("no MCP servers are configured")
        return
    click.echo(render.table(render.status_rows(loaded.servers, loaded.sources, credentials)))


def _credential_states(loaded: Any) -> dict[str, str]:
    """Ask the AuthManager (without connecting), only when some server uses auth."""
    from hostlink.mcp.extension import default_auth

    if not any(getattr(c, "auth", None) for c in loaded.servers.values()):
        return {}
    import anyio

    async def ask() -> dict[str, str]:
        auth = default_auth(loaded.servers)
        if auth is None:
            return {}
        states: dict[str, str] = {}
        try:
            for name, config in loaded.servers.items():
                if getattr(config, "auth", None) and not config.disabled:
                    try:
                        states[name] = await auth.credential_state(name, config)
                    except Exception as exc:  # noqa: BLE001 - one server's store error is shown, not fatal
                        states[name] = f"unknown ({type(exc).__name__})"
        finally:
            await auth.aclose()
        return states

    from hostlink.host.output import one_line

    return {name: one_line(state, 60) for name, state in anyio.run(ask).items()}


@mcp_group.command()
@click.argument("server")
@click.option("--json", "as_json", is_flag=True, help="The tools as JSON, with input schemas.")
@click.pass_context
def tools(ctx: click.Context, server: str, as_json: bool) -> None:
    """List the tools SERVER offers to the model."""
    from hostlink.mcp import render
    from hostlink.mcp.tool import model_visible

    async def work(runtime: Any) -> list[Any]:
        return [tool for tool in await runtime.list_tools(server) if model_visible(tool)]

    listed = _serve(ctx, server, work)
    if as_json:
        _echo_json([{"name": t.name, "description": t.description, "inputSchema": t.input_schema}
                    for t in listed])
    else:
        click.echo("\n".join(render.tool_line(tool) for tool in listed) or f"{server}: no tools")


@mcp_group.command()
@click.argument("server")
@click.option("--json", "as_json", is_flag=True, help="The connection snapshot as JSON.")
@click.pass_context
def connect(ctx: click.Context, server: str, as_json: bool) -> None:
    """Connect to SERVER, list its tools and report the connection."""
    from hostlink.mcp import render

    async def work(runtime: Any) -> Any:
        await runtime.connect(server)
        await runtime.list_tools(server)
        return runtime.snapshot(server)

    snapshot = _serve(ctx, server, work)
    if as_json:
        from hostlink.mcp.tool import model_visible

        _echo_json({"name": server, "state": snapshot.state, "protocolVersion": snapshot.protocol_version,
                    "serverName": snapshot.server_name, "serverVersion": snapshot.server_version,
                    "tools": sum(1 for tool in snapshot.tools or () if model_visible(tool))})
    else:
        click.echo(render.snapshot_line(snapshot))


@mcp_group.command()
@click.argument("server")
@click.pass_context
def disconnect(ctx: click.Context, server: str) -> None:
    """Close SERVER's connection (each hostlink command has its own; this one has none open)."""
    loaded = _load(ctx)
    _check_server(loaded, server)
    click.echo(f"{server}: idle (not connected in this process)")


@mcp_group.command()
@click.argument("server")
@click.pass_context
def reconnect(ctx: click.Context, server: str) -> None:
    """Reset SERVER to idle, clearing a failed setup; never starts authorization."""
    loaded = _load(ctx)
    _check_server(loaded, server)
    click.echo(f"{server}: reset to idle; the next use connects")


@mcp_group.command()
@click.argument("server")
@click.argument("tool")
@click.argument("arguments", default="{}", metavar="JSON")
@click.option("--json", "as_json", is_flag=True, help="The bounded result as JSON.")
@click.pass_context
def call(ctx: click.Context, server: str, tool: str, arguments: str, as_json: bool) -> None:
    """Call TOOL on SERVER with a JSON object of arguments (for scripts)."""
    try:
        args = json.loads(arguments)
    except ValueError:
        raise _Fail("JSON must be a JSON object of tool arguments") from None
    if not isinstance(args, dict):
        raise _Fail("JSON must be a JSON object of tool arguments")
    from hostlink.mcp.tool import run_action

    async def work(runtime: Any) -> Any:
        return await run_action(runtime, None, {"action": "call", "server": server, "tool": tool, "args": args})

    result = _serve(ctx, server, work)
    if as_json:
        _echo_json({"isError": result.is_error, "content": [
            {"type": "text", "text": item.text} if item.type == "text"
            else {"type": "image", "mimeType": item.mime_type, "data": item.data} for item in result.content]})
    else:
        for item in result.content:
            click.echo(item.text if item.type == "text" else f"[image {item.mime_type}, {len(item.data)} base64 chars]",
                       err=result.is_error)
    if result.is_error:
        sys.exit(1)


from hostlink.mcp.auth_command import auth_command, logout_command  # noqa: E402 - cheap: click only

mcp_group.add_command(auth_command)
mcp_group.add_command(logout_command)
