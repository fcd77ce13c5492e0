"""One action of the `mcp` tool run for a command (`call`, `read`, `prompt`, the listings), and
its answer as the command shows it.

The command gets exactly what the model would: the same checks, the same inline window (what
is beyond it kept in the session's private overflow file, written out whole for `--output FILE`
or `--full`). What differs is for the person or script: a failure of hostlink (not of the tool)
is its one line with its code and exit status, then what the server said; `--json` is the
result as one object.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import click

from hostlink.cli.mcp.session import verbose, with_server
from hostlink.cli.session import EXIT_CODES, Fail, command_path

if TYPE_CHECKING:
    from hostlink.cli.mcp.output import Sink
    from hostlink.host import ToolResult
    from hostlink.host.session import HostSession

Run = Callable[["HostSession", Mapping[str, Any]], Awaitable["ToolResult"]]  # the action, perhaps watched


async def _plain(host: HostSession, args: Mapping[str, Any]) -> ToolResult:
    from hostlink.host import CancelSignal

    return await host.run_tool("mcp", args, CancelSignal())


def run_action(ctx: click.Context, server: str, args: Mapping[str, Any], *, as_json: bool = False,
               sink: Sink | None = None, run: Run = _plain) -> tuple[ToolResult, list[str]]:
    """The action's result on SERVER and, when the server failed, what it said; the whole
    result is written to `sink` before the session removes its overflow file."""
    async def ran(extension: Any, host: HostSession) -> tuple[ToolResult, list[str]]:
        from hostlink.cli.mcp.output import write_whole
        from hostlink.mcp import server_words

        result = await run(host, args)
        assert extension.runtime is not None
        handle = (result.details or {}).get("task")
        if isinstance(handle, dict):  # the command shows its id: the person's to read later, not ended here
            extension.runtime.tasks.hand_over(handle["server"], handle["taskId"])
        failed = extension.runtime.snapshot(server).error if result.is_error else None
        if sink is not None and "error" not in (result.details or {}):
            write_whole(result, host.output, sink, as_json)
        return result, server_words(failed, verbose=verbose(ctx))

    try:
        return with_server(ctx, server, ran, keep_output=sink is not None)
    except BaseException:
        if sink is not None:
            sink.discard()
        raise


def failure(result: ToolResult, server: str) -> tuple[str, str] | None:
    """When hostlink failed (not the tool): its message, the tools hint in this host's words,
    and its code."""
    code = (result.details or {}).get("error")
    if code is None:
        return None
    from hostlink.mcp import SEE_TOOLS

    message = "\n".join(item.text for item in result.content if item.type == "text")
    return message.replace(SEE_TOOLS, f"(see `{command_path()} tools {server}`)"), code


def answer(result: ToolResult, words: list[str], server: str, *, as_json: bool = False, sink: Sink | None = None,
           whole_hint: bool = True, timeout_option: bool = False) -> None:
    """Show the result (unless the sink took it) and exit with its status: a hostlink failure
    raises `Fail`, a tool's own error exits 1. `whole_hint`: a cut result says how to get it
    whole (the command has --output and --full); `timeout_option`: the command has --timeout."""
    failed = failure(result, server)
    if failed is not None:
        if sink is not None:
            sink.discard()
        message, code = failed
        if code == "timeout":
            message += ("; wait longer with --timeout SECONDS or a larger toolTimeoutMs (the call), or a larger "
                        "requestTimeoutMs (the setup)" if timeout_option
                        else "; wait longer with a larger toolTimeoutMs (a call) or requestTimeoutMs (the setup)")
        raise Fail(message, code, words, prefixed=False)
    if sink is None:
        show(result, as_json, whole_hint=whole_hint)
    if result.is_error:
        sys.exit(EXIT_CODES["tool_error"])


def show(result: ToolResult, as_json: bool, *, whole_hint: bool = True) -> None:
    """The bounded result; when it was cut, where the whole of it can be had."""
    from hostlink.cli.mcp.output import item_line, result_object
    from hostlink.host.output import TRUNCATED, compact_json

    cut = any(item.type == "text" and item.text.rsplit("\n", 1)[-1].startswith(TRUNCATED) for item in result.content)
    if cut and whole_hint:
        click.echo(f"{command_path()}: the result was cut to its inline window; --output FILE or --full "
                   "writes it whole", err=True)
    if as_json:
        click.echo(compact_json(result_object(result)))
        return
    for item in result.content:
        line = item_line(item)  # a text that ends its last line gets no blank line after it
        click.echo(line, err=result.is_error, nl=not line.endswith("\n"))
