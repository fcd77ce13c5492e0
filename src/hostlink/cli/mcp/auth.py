"""`hostlink mcp auth SERVER` and `hostlink mcp logout SERVER` (also under `llm mcp`).

Sign-in prints the authorization link for the person to open (hostlink never opens a
browser), waits for the callback on the loopback receiver, and reports the result. Both run
in a host session over the MCP extension, whose AuthManager does the work. Importing this
module is cheap: the SDK and keyring load inside the commands.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from hostlink.cli.mcp.session import with_server
from hostlink.cli.session import Fail

if TYPE_CHECKING:
    from hostlink.host.session import HostSession
    from hostlink.mcp import AuthManager, HttpServer, McpExtension


def _auth_of(extension: McpExtension, server: str) -> tuple[HttpServer, AuthManager]:
    """SERVER's configuration and the session's AuthManager; fails unless SERVER uses auth."""
    assert extension.runtime is not None
    config = extension.runtime.config(server)
    if config.transport != "http" or config.auth is None or extension.runtime.auth is None:
        raise Fail(f"MCP server {server!r} is not configured with authentication")
    return config, extension.runtime.auth


@click.command(name="auth")
@click.argument("server")
@click.option("--timeout", default=300, show_default=True, type=click.IntRange(1, 3600),
              help="Seconds to wait for the authorization callback.")
@click.pass_context
def auth_command(ctx: click.Context, server: str, timeout: int) -> None:
    """Sign in to SERVER: print an authorization link, wait for its callback."""
    async def signed_in(extension: McpExtension, host: HostSession) -> str:
        from hostlink.mcp import sign_in, sign_in_prompt

        config, manager = _auth_of(extension, server)
        click.echo(sign_in_prompt(server, await sign_in(manager, server, config)))
        click.echo(f"Waiting up to {timeout} s for the authorization callback…", err=True)
        await manager.wait_login(server, config, timeout)
        return await manager.credential_state(server, config)

    click.echo(f"{server}: {with_server(ctx, server, signed_in)}")


@click.command(name="logout")
@click.argument("server")
@click.pass_context
def logout_command(ctx: click.Context, server: str) -> None:
    """Sign out of SERVER: remove its stored credentials, confirmed by the keyring, and revoke
    its tokens where the authorization server supports that."""
    async def sign_out(extension: McpExtension, host: HostSession) -> str | None:
        from hostlink.mcp import signed_out

        config, manager = _auth_of(extension, server)
        if config.auth != "oauth" or (config.oauth and config.oauth.grant_type != "authorization_code"):
            return None
        outcome = signed_out(server, await manager.logout(server, config))
        assert extension.runtime is not None
        await extension.runtime.reconnect(server)  # drops its cached tool listing too
        return outcome

    report = with_server(ctx, server, sign_out)
    click.echo(report or f"{server}: nothing stored (its credentials come from the environment)")
