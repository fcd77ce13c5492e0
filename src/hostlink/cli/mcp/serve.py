"""`hostlink mcp serve` (and `llm mcp serve`): the configured MCP servers as one MCP
server for any MCP host (see `hostlink.gateway`).

Importing this module stays cheap (click only): the SDK loads when the gateway runs, and
`--show-config` never loads it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from hostlink.cli.mcp.session import verbose, verbose_option
from hostlink.cli.session import Fail, endpoint_key
from hostlink.host.platform.console import exit_status, stop_name

# hostlink.gateway.snippets.PROGRAMS, named here so that loading the mcp group stays cheap
SHOWN = ("claude-code", "claude-desktop", "cursor", "vscode", "codex", "gemini")


@click.command(name="serve")
@click.option("--expose", type=click.Choice(["proxy", "tools"]), default="proxy", show_default=True,
              help="proxy: the one bounded `mcp` tool; tools: every server's tools as <server>__<tool>.")
@click.option("--http", "use_http", is_flag=True, help="Serve Streamable HTTP on loopback instead of stdio.")
@click.option("--port", type=click.IntRange(0, 65535), default=8486, show_default=True,
              help="With --http: the port (0: any free port).")
@click.option("--host", "address", default="127.0.0.1", show_default=True,
              help="With --http: 127.0.0.1 or [::1]; no other address is accepted.")
@click.option("--token-env", metavar="VAR", help="With --http: take the key from this environment variable "
              "instead of a random one.")
@click.option("--show-config", "program", type=click.Choice(SHOWN),
              help="Print what adds hostlink to PROGRAM (writes nothing) and exit.")
@verbose_option
@click.pass_context
def serve_command(ctx: click.Context, expose: str, use_http: bool, port: int, address: str,
                  token_env: str | None, program: str | None) -> None:
    """Serve the configured MCP servers as one MCP server (stdio, or --http).

    Add it to an MCP host with one line (see --show-config). Servers connect on first use.
    Over stdio, closing stdin, SIGTERM or SIGHUP stops it; over --http stdin is not read (a
    service manager's is empty), and Ctrl-C, SIGTERM or SIGHUP stop it. Stopping stops every
    server it started and removes every private file.
    """
    args = ["mcp", "serve", *(["--expose", "tools"] if expose == "tools" else [])]
    if program is not None:
        from hostlink.gateway.snippets import show_config

        click.echo(show_config(program, _own_command(), args))
        return
    port_given = ctx.get_parameter_source("port") != click.core.ParameterSource.DEFAULT
    if not use_http and (token_env is not None or port_given):
        raise Fail("--port and --token-env go with --http")
    from hostlink.host.trust import project_trust

    cwd = Path.cwd()
    # --trust-project itself (not a recorded trust), for deciding anew at a reload
    trust_flag = bool(ctx.obj["trust_project"]) and not project_trust(cwd, os.environ).trusted
    if use_http:
        _serve_http(expose, port, address, token_env, cwd, trust_flag, verbose(ctx))
    else:
        _serve_stdio(expose, cwd, trust_flag, verbose(ctx))


def _own_command() -> str:
    """The running `hostlink` as an absolute path when it is one, else `hostlink`."""
    import shutil

    found = shutil.which(sys.argv[0]) if Path(sys.argv[0]).name == "hostlink" else shutil.which("hostlink")
    return str(Path(found).resolve()) if found else "hostlink"


def _serve_stdio(expose: str, cwd: Path, trust_flag: bool, loud: bool) -> None:
    import anyio

    from hostlink.gateway.server import Gateway
    from hostlink.gateway.stdio import serve_stdio
    from hostlink.host.session import Terminated

    gateway = Gateway("tools" if expose == "tools" else "proxy", verbose=loud)
    try:
        anyio.run(lambda: serve_stdio(gateway, cwd=cwd, environ=os.environ, trust_flag=trust_flag))
    except Terminated as stopped:
        click.echo(f"hostlink mcp serve: {stopped}; every server it started was stopped", err=True)
        raise SystemExit(exit_status(stopped.signum)) from None


def _serve_http(expose: str, port: int, address: str, token_env: str | None, cwd: Path, trust_flag: bool,
                loud: bool) -> None:

    import anyio

    from hostlink.gateway.http import PATH, serve_http
    from hostlink.gateway.server import Gateway
    from hostlink.serve.server import loopback_address

    try:
        loopback_address(address)
    except ValueError as error:
        raise Fail(str(error)) from None
    token = endpoint_key(token_env)

    def listening(url: str, key_file: Path) -> None:
        key = f"${token_env}" if token_env is not None else f"$(cat {key_file})"
        click.echo(f"hostlink mcp serve: MCP (Streamable HTTP) at {url}")
        click.echo(f"Authorization: Bearer {key}")
        click.echo(f"Status page: {url.removesuffix(PATH)}/ (sign in with the key)", err=True)
        click.echo("Ctrl-C stops the server.", err=True)

    gateway = Gateway("tools" if expose == "tools" else "proxy", verbose=loud)
    stopped = anyio.run(lambda: serve_http(gateway, address=address, port=port, token=token, cwd=cwd,
                                           environ=os.environ, trust_flag=trust_flag, on_listening=listening))
    if stopped is not None:
        click.echo(f"hostlink mcp serve: stopped by {stop_name(stopped)}; every server it started was "
                   "stopped", err=True)
        raise SystemExit(exit_status(stopped))
