"""`hostlink mcp call SERVER TOOL JSON` (and `llm mcp call`): one tool call, for scripts.

The call goes through the `mcp` tool, so its arguments are checked against the tool's
schema and its result is bounded exactly as the model's would be. What differs is for the
person or script: the JSON may come from stdin (`-`), a parse error says where, a failure
exits with its kind (0 ok, 1 the tool's own error, 2 usage, 3 connection, 4 sign-in) and
`--json` is the whole result as one object, or `{"error": {"code", "message"}}`.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import click

from hostlink.cli.mcp.session import verbose, verbose_option
from hostlink.cli.session import Fail

if TYPE_CHECKING:
    from hostlink.host import ToolResult
    from hostlink.host.session import HostSession

MAX_STDIN_BYTES = 16 * 1024 * 1024  # arguments read from stdin


def parse_arguments(text: str, where: str = "the arguments") -> dict[str, Any]:
    """The tool arguments as a JSON object; a parse error names its line and column."""
    import json

    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise Fail(f"{where} are not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
                   "invalid_arguments") from None
    except (ValueError, RecursionError):
        raise Fail(f"{where} are not valid JSON (nested too deeply or an oversized number)",
                   "invalid_arguments") from None
    if not isinstance(value, dict):
        raise Fail(f"{where} must be a JSON object of tool arguments (got a JSON {type(value).__name__})",
                   "invalid_arguments")
    return value


def read_arguments(arguments: str) -> dict[str, Any]:
    """`-` reads the arguments from stdin (at most 16 MiB); anything else is the JSON."""
    if arguments != "-":
        return parse_arguments(arguments)
    data = sys.stdin.buffer.read(MAX_STDIN_BYTES + 1)
    if len(data) > MAX_STDIN_BYTES:
        raise Fail("the arguments on stdin are larger than 16 MiB", "invalid_arguments")
    return parse_arguments(data.decode("utf-8", "replace"), "the arguments on stdin")


@click.command(name="call")
@click.argument("server")
@click.argument("tool")
@click.argument("arguments", default="{}", metavar="JSON")
@click.option("--json", "as_json", is_flag=True,
              help="The result as one JSON object (isError, content, structuredContent); errors as "
                   '{"error": {"code", "message"}}.')
@click.option("--timeout", type=click.FloatRange(0.1, 3600), metavar="SECONDS",
              help="How long the call may go without an answer or a progress notification (instead of "
                   "SERVER's toolTimeoutMs; its requestTimeoutMs still bounds the setup).")
@click.option("--output", "-o", metavar="FILE",
              help="Write the whole result to FILE (created 0600), not the 50 KiB inline window.")
@click.option("--full", is_flag=True, help="Write the whole result to stdout, which must not be a terminal.")
@click.option("--detach", is_flag=True, help='A call SERVER runs as a task ("tasks": true) prints the task id at '
                                            "once and keeps running; read it later with `mcp task SERVER ID`.")
@verbose_option
@click.pass_context
def call(ctx: click.Context, server: str, tool: str, arguments: str, as_json: bool, timeout: float | None,
         output: str | None, full: bool, detach: bool) -> None:
    """Call TOOL on SERVER with a JSON object of arguments (JSON "-": read it from stdin).

    On a terminal, a call that reports progress shows it on one line of stderr; with -v, the
    server's log messages during the call are shown on stderr, one line each. Exit status:
    0 ok, 1 the tool reported an error, 2 usage or configuration, 3 connection or server,
    4 authentication needed.
    """
    from hostlink.cli.mcp.action import answer, run_action
    from hostlink.cli.mcp.output import open_sink

    args = read_arguments(arguments)
    sink = open_sink(output, full)

    async def watched(host: HostSession, action: Mapping[str, Any]) -> ToolResult:
        from hostlink.cli.progress_line import ProgressLine
        from hostlink.host import CancelSignal
        from hostlink.host.progress import CallWatch, watching

        line = ProgressLine(sys.stderr) if sys.stderr.isatty() else None
        told = _told if verbose(ctx) else None
        try:
            with watching(CallWatch(line, timeout, log=told, log_level="debug", detach=detach)):
                return await host.run_tool("mcp", action, CancelSignal())
        finally:
            if line is not None:
                line.clear()

    result, words = run_action(ctx, server, {"action": "call", "server": server, "tool": tool, "args": args},
                               as_json=as_json, sink=sink, run=watched)
    handle = (result.details or {}).get("task")
    if handle is not None:
        from hostlink.cli.mcp.session import load
        from hostlink.cli.session import command_path

        task_id = handle["taskId"]
        config = load(ctx).servers.get(server)
        click.echo(f"{command_path()}: task {task_id} of {server} " + (
            "ended with this command: a stdio server's tasks end with its process (give the call more time "
            "with --timeout SECONDS)" if config is not None and config.transport == "stdio"
            else f"is still running; read it with `{command_path()} task {server} {task_id}`"), err=True)
        if detach and not as_json:
            click.echo(task_id)
            return
    answer(result, words, server, as_json=as_json, sink=sink, timeout_option=True)


def _told(server: str, level: str, logger: str | None, data: Any) -> None:
    """One of the server's log messages as a line on stderr (its words: sanitized, bounded)."""
    from hostlink.host.output import compact_json, one_line

    source = f"{server}/{one_line(logger, 64)}" if logger else server
    click.echo(f"{source} log {level}: {one_line(data if isinstance(data, str) else compact_json(data), 300)}",
               err=True)
