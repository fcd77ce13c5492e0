"""``hostlink mcp auth SERVER`` and ``hostlink mcp logout SERVER``.

Sign-in prints the authorization link for the user to open (hostlink never opens a
browser), waits for the callback on the loopback receiver, and reports the result.
Importing this module is cheap: the SDK and keyring load inside the commands.
"""

from __future__ import annotations

from typing import Any

import click


def _oauth_server(ctx: click.Context, server: str) -> tuple[Any, Any]:
    from hostlink.mcp.command import _check_server, _Fail, _load

    loaded = _load(ctx)
    _check_server(loaded, server)
    config = loaded.servers[server]
    if getattr(config, "auth", None) is None:
        raise _Fail(f"MCP server {server!r} is not configured with authentication")
    return loaded, config


def _run(work: Any) -> Any:
    import anyio

    from hostlink.mcp.command import _Fail
    from hostlink.mcp.errors import McpError

    try:
        return anyio.run(work)
    except McpError as error:
        raise _Fail(str(error)) from None


@click.command(name="auth")
@click.argument("server")
@click.option("--timeout", default=300, show_default=True, type=click.IntRange(1, 3600),
              help="Seconds to wait for the authorization callback.")
@click.pass_context
def auth_command(ctx: click.Context, server: str, timeout: int) -> None:
    """Sign in to SERVER: print an authorization link, wait for its callback."""
    _, config = _oauth_server(ctx, server)

    async def work() -> str:
        from hostlink.mcp.auth import AuthManager
        from hostlink.mcp.signin import sign_in, sign_in_prompt

        manager = AuthManager()
        try:
            click.echo(sign_in_prompt(server, await sign_in(manager, server, config)))
            click.echo(f"Waiting up to {timeout} s for the authorization callback…", err=True)
            await manager.wait_login(server, config, timeout)
            return await manager.credential_state(server, config)
        finally:
            await manager.aclose()

    click.echo(f"{server}: {_run(work)}")


@click.command(name="logout")
@click.argument("server")
@click.pass_context
def logout_command(ctx: click.Context, server: str) -> None:
    """Sign out of SERVER: remove its stored credentials, confirmed by the keyring."""
    _, config = _oauth_server(ctx, server)
    if config.auth != "oauth" or (config.oauth and config.oauth.grant_type != "authorization_code"):
        click.echo(f"{server}: nothing stored (its credentials come from the environment)")
        return

    async def work() -> None:
        from hostlink.mcp.auth import AuthManager

        manager = AuthManager()
        try:
            await manager.logout(server, config)
        finally:
            await manager.aclose()

    _run(work)
    click.echo(f"{server}: signed out (the keyring confirmed the record is gone)")
