"""`hostlink serve`: the Claude Code provider as a local Anthropic Messages, OpenAI Chat
Completions and OpenAI Responses endpoint (see `hostlink.serve`).

Importing this module stays cheap (click only); the server loads when the command runs.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from hostlink.cli.session import Fail, StderrNotifier, endpoint_key
from hostlink.host.platform.console import stop_name
from hostlink.host.platform.shell import file_contents, literal, set_variable_line, variable_value

if TYPE_CHECKING:
    from hostlink.host import Extension
    from hostlink.host.session import HostSession
    from hostlink.serve.server import Listening


@click.command(name="serve")
@click.option("--port", type=click.IntRange(0, 65535), default=8484, show_default=True,
              help="Port on the loopback address (0: any free port).")
@click.option("--host", "address", default="127.0.0.1", show_default=True,
              help="127.0.0.1 or [::1]; no other address is accepted.")
@click.option("--max-concurrent", type=click.IntRange(1, 64), default=4, show_default=True,
              help="Requests served at once (each runs its own claude); more get 429.")
@click.option("--token-env", metavar="VAR", help="Take the API key from this environment variable "
              "instead of a random one.")
@click.option("--extra-usage", type=click.Choice(["allow", "warn", "refuse"]), default=None,
              help="When the Claude plan's window is used up and requests would draw on extra usage: allow, "
                   "warn (a header and a notice) or refuse (429 until the window resets). "
                   "Default: HOSTLINK_CLAUDE_EXTRA_USAGE, else warn.")
@click.option("--quiet", is_flag=True, help="No access-log line per request on stderr.")
def serve_command(port: int, address: str, max_concurrent: int, token_env: str | None,
                  extra_usage: str | None, quiet: bool) -> None:
    """Serve Claude Code as a local Anthropic Messages, OpenAI Chat Completions and OpenAI
    Responses API.

    Any program that speaks one of them can use your signed-in claude CLI as its model and
    keep running its own tools. Stop with Ctrl-C: every running claude is stopped and every
    private file removed.
    """
    from hostlink.claude_code import ClaudeCodeExtension, ExtraUsageSettingError

    try:
        extension = ClaudeCodeExtension(extra_usage=extra_usage)
        extension.guard.mode()  # HOSTLINK_CLAUDE_EXTRA_USAGE is checked before anything starts
    except ExtraUsageSettingError as error:
        raise Fail(str(error)) from None
    run_server([extension], port=port, address=address, max_concurrent=max_concurrent,
               token_env=token_env, extra_usage=extra_usage, quiet=quiet)


PREFLIGHT_SECONDS = 20


async def preflight(host: HostSession) -> None:
    """The doctor's checks (CLI found, signed in, the proposal bridge), bounded in time: each
    failure is a warning on stderr, the server keeps running."""
    import anyio

    from hostlink.host import CancelSignal

    text = None
    with anyio.move_on_after(PREFLIGHT_SECONDS):
        text = await host.run_command("claude-code", ["doctor"], CancelSignal())
    if text is None:
        click.echo(f"hostlink serve: warning: the start-up check (hostlink claude-code doctor) did not finish "
                   f"within {PREFLIGHT_SECONDS} s", err=True)
        return
    for line in text.splitlines():
        if line.startswith("FAIL"):
            click.echo(f"hostlink serve: warning: requests will fail until this is fixed: {line[4:].strip()}",
                       err=True)


def run_server(extensions: Sequence[Extension], *, port: int, address: str, max_concurrent: int,
               token_env: str | None, extra_usage: str | None = None, quiet: bool = False) -> None:
    """Serve `extensions` (which must include the Claude Code one) until stopped
    (`extra_usage`: the mode the Claude Code extension was given, for the usage reports)."""
    import anyio

    from hostlink.host.session import HostSession
    from hostlink.host.trust import project_trust
    from hostlink.serve.connections import connection_bound
    from hostlink.serve.server import loopback_address, serve

    try:
        loopback_address(address)
        connection_bound(max_concurrent)
    except ValueError as error:
        raise Fail(str(error)) from None
    token = endpoint_key(token_env)
    host = HostSession(extensions, command="hostlink", conversations=max_concurrent)

    def listening(where: Listening) -> None:
        key = variable_value(token_env) if token_env is not None else file_contents(str(where.key_file))
        click.echo(f"hostlink serve: listening on {where.base_url} "
                   f"(Anthropic Messages at {where.base_url}/v1/messages, "
                   f"OpenAI Chat Completions and Responses at {where.base_url}/v1)")
        click.echo(set_variable_line("ANTHROPIC_BASE_URL", literal(where.base_url)))
        click.echo(set_variable_line("ANTHROPIC_API_KEY", key))
        click.echo(set_variable_line("OPENAI_BASE_URL", literal(f"{where.base_url}/v1")))
        click.echo(set_variable_line("OPENAI_API_KEY", key))
        click.echo(f"Status page: {where.base_url}/ (sign in with the key)", err=True)
        click.echo("Ctrl-C stops the server.", err=True)

    async def main() -> int | None:
        return await serve(host, token=token, address=address, port=port, max_concurrent=max_concurrent,
                           cwd=Path.cwd(), notifier=StderrNotifier(),
                           project_trusted=project_trust(Path.cwd(), os.environ).trusted, on_listening=listening,
                           extra_usage=extra_usage,
                           access=None if quiet else (lambda line: click.echo(line, err=True)),
                           preflight=preflight)

    stopped = anyio.run(main)
    if stopped is not None:
        click.echo(f"hostlink serve: stopped by {stop_name(stopped)}; every request's claude was stopped",
                   err=True)
