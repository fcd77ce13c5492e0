"""`hostlink mcp resources | read | prompts | prompt` (and `llm mcp …`): what a server offers
besides tools.

Each runs the `mcp` tool's action of the same name, so a person sees what the model would:
the same lines and footers, a resource or prompt bounded to the same inline window (`--output
FILE` or `--full` writes it whole) and failures with `call`'s codes and exit statuses. `--json`
is for scripts: a listing as an array of the server's objects (each with its `server`), a read
or a prompt as `call --json`'s result object. Without SERVER a listing covers every enabled
server; one that offers no resources (or prompts) says so, and one that fails is reported on
stderr after the others are listed, its exit status the command's.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import click

from hostlink.cli.mcp.call import read_arguments
from hostlink.cli.mcp.session import verbose, verbose_option, with_server
from hostlink.cli.session import EXIT_CODES, Fail, command_path

if TYPE_CHECKING:
    from hostlink.host import ToolResult
    from hostlink.host.session import HostSession
    from hostlink.mcp import McpExtension, McpRuntime

FC = TypeVar("FC", bound=Callable[..., Any])
TEXT_LIMIT = 50  # entries of a listing's text page: the most the action shows at once

_OFFSET = click.option("--offset", default=0, type=click.IntRange(0),
                       help="Skip this many entries of each server's listing (with --json: of the whole array).")
_OUTPUT = click.option("--output", "-o", metavar="FILE",
                       help="Write the whole result to FILE (created 0600), not the 50 KiB inline window.")
_FULL = click.option("--full", is_flag=True, help="Write the whole result to stdout, which must not be a terminal.")


def _json_option(what: str) -> Callable[[FC], FC]:
    return click.option("--json", "as_json", is_flag=True, help=what + ' Errors as {"error": {"code", "message"}}.')


@click.command(name="resources")
@click.argument("server", required=False)
@_json_option("The resources as a JSON array, each with its server.")
@_OFFSET
@verbose_option
@click.pass_context
def resources_command(ctx: click.Context, server: str | None, as_json: bool, offset: int) -> None:
    """List the resources SERVER offers (every enabled server without SERVER)."""
    _list(ctx, server, "resources", "resources", as_json, offset)


@click.command(name="prompts")
@click.argument("server", required=False)
@_json_option("The prompts as a JSON array with their arguments, each with its server.")
@_OFFSET
@verbose_option
@click.pass_context
def prompts_command(ctx: click.Context, server: str | None, as_json: bool, offset: int) -> None:
    """List the prompts SERVER offers (every enabled server without SERVER)."""
    _list(ctx, server, "prompts", "prompts", as_json, offset)


@click.command(name="read")
@click.argument("server")
@click.argument("uri")
@_json_option("The contents as one JSON object (isError, content).")
@_OUTPUT
@_FULL
@verbose_option
@click.pass_context
def read_command(ctx: click.Context, server: str, uri: str, as_json: bool, output: str | None, full: bool) -> None:
    """Read the resource URI of SERVER.

    Exit status: 0 ok, 2 usage or configuration, 3 connection or server (an unknown URI
    among them), 4 authentication needed.
    """
    _one(ctx, server, {"action": "read", "server": server, "uri": uri}, as_json, output, full)


@click.command(name="prompt")
@click.argument("server")
@click.argument("name")
@click.argument("arguments", default="{}", metavar="JSON")
@_json_option("The prompt's messages as one JSON object (isError, content).")
@_OUTPUT
@_FULL
@verbose_option
@click.pass_context
def prompt_command(ctx: click.Context, server: str, name: str, arguments: str, as_json: bool, output: str | None,
                   full: bool) -> None:
    """Get the prompt NAME of SERVER with a JSON object of string arguments (JSON "-": read it
    from stdin).

    Exit status: 0 ok, 2 usage or configuration, 3 connection or server, 4 authentication needed.
    """
    args = read_arguments(arguments)
    _one(ctx, server, {"action": "prompt", "server": server, "prompt": name, "args": args}, as_json, output, full)


def _one(ctx: click.Context, server: str, args: dict[str, Any], as_json: bool, output: str | None,
         full: bool) -> None:
    from hostlink.cli.mcp.action import answer, run_action
    from hostlink.cli.mcp.output import open_sink

    sink = open_sink(output, full)
    result, words = run_action(ctx, server, args, as_json=as_json, sink=sink)
    answer(result, words, server, as_json=as_json, sink=sink)


@dataclass
class _Listing:
    """One server's answer to a listing: the action's result (text), the entries (--json) or
    a failure (message, code, what the server said); none of them: it offers no such thing."""

    result: ToolResult | None = None
    entries: list[Any] | None = None
    error: tuple[str, str, list[str]] | None = None


def _list(ctx: click.Context, server: str | None, action: str, noun: str, as_json: bool, offset: int) -> None:
    """SERVER's listing as the action gives it, or every enabled server's, each under its
    name; with --json the entries themselves."""
    from hostlink.cli.mcp.action import show

    talkative = verbose(ctx)

    async def listed(extension: McpExtension, host: HostSession) -> dict[str, _Listing]:
        import anyio

        assert extension.runtime is not None
        runtime = extension.runtime
        names = [server] if server is not None else sorted(n for n, c in runtime.servers.items() if not c.disabled)
        listings: dict[str, _Listing] = {} if server is not None else {
            name: _Listing(error=(f"MCP server {name!r} is misconfigured: {why}", "invalid_config", []))
            for name, why in runtime.broken.items()}

        async def one(name: str) -> None:
            listings[name] = await _server_listing(runtime, host, name, action, noun, as_json, offset, talkative)

        async with anyio.create_task_group() as group:  # servers start in parallel
            for name in names:
                group.start_soon(one, name)
        return listings

    listings = with_server(ctx, server, listed)
    failures: list[str] = []
    entries: list[Any] = []
    for name, listing in sorted(listings.items()):
        if listing.error is not None:
            message, code, words = listing.error
            if server is not None:  # the one server's failure is the command's
                raise Fail(message, code, words, prefixed=False)
            failures.append(code)
            click.echo("\n".join([f"{command_path()}: {message}", *words]), err=True)
        elif as_json:
            entries.extend(listing.entries or [])
        elif listing.result is None:
            click.echo(f"{name}: no {noun} (the server offers none)")
        else:
            if server is None:
                click.echo(f"{name}:")
            show(listing.result, False, whole_hint=False)
    if as_json:
        _echo_entries(entries, offset, noun)
    if failures:
        sys.exit(EXIT_CODES.get(failures[0], 1))


async def _server_listing(runtime: McpRuntime, host: HostSession, name: str, action: str, noun: str, as_json: bool,
                          offset: int, talkative: bool) -> _Listing:
    from hostlink.cli.mcp.action import failure
    from hostlink.host import CancelSignal
    from hostlink.mcp import McpError, error_code, server_words

    try:
        offered = noun in (await runtime.connect(name)).capabilities
        if offered and as_json:
            return _Listing(entries=await _entries(runtime, name, noun))
    except McpError as error:
        return _Listing(error=(str(error), error_code(error), server_words(error, verbose=talkative)))
    if not offered:
        return _Listing()
    result = await host.run_tool("mcp", _offered(action, name, offset), CancelSignal())
    failed = failure(result, name)
    if failed is not None:
        return _Listing(error=(*failed, server_words(runtime.snapshot(name).error, verbose=talkative)))
    return _Listing(result=result)


def _offered(action: str, server: str, offset: int) -> dict[str, Any]:
    return {"action": action, "server": server, "limit": TEXT_LIMIT, "offset": offset}


async def _entries(runtime: McpRuntime, name: str, noun: str) -> list[Any]:
    """Every entry the server lists, as plain sanitized JSON with its server."""
    import json

    from hostlink.host.output import compact_json
    from hostlink.mcp import every_page

    page = runtime.list_resources if noun == "resources" else runtime.list_prompts
    items = await every_page(lambda cursor: page(name, cursor), name, noun)
    return [{"server": name, **json.loads(compact_json(item.model_dump(by_alias=True, exclude_none=True)))}
            for item in items]


def _echo_entries(entries: list[Any], offset: int, noun: str) -> None:
    from hostlink.cli.mcp.listing import bounded_json_entries
    from hostlink.host.output import compact_json

    shown, footer = bounded_json_entries(entries, offset, noun)
    click.echo(compact_json(shown))
    if footer:
        click.echo(f"{command_path()}: {footer}", err=True)
