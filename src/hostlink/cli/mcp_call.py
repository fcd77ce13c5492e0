"""``hostlink mcp call SERVER TOOL JSON`` (and ``llm mcp call``): one tool call, for scripts.

The call goes through the ``mcp`` tool, so its arguments are checked against the tool's
schema and its result is bounded exactly as the model's would be. What differs is for the
person or script: the JSON may come from stdin (``-``), a parse error says where, a failure
exits with its kind (0 ok, 1 the tool's own error, 2 usage, 3 connection, 4 sign-in) and
``--json`` is the whole result as one object, or ``{"error": {"code", "message"}}``.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from hostlink.cli.mcp_session import verbose, verbose_option, with_server
from hostlink.cli.session import EXIT_CODES, Fail, command_path

if TYPE_CHECKING:
    from hostlink.host import ToolResult
    from hostlink.host.session import HostSession
    from hostlink.mcp.extension import McpExtension

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
        raise Fail(f"{where} are not valid JSON (nested too deeply or an oversized number)", "invalid_arguments") from None
    if not isinstance(value, dict):
        raise Fail(f"{where} must be a JSON object of tool arguments (got a JSON {type(value).__name__})",
                   "invalid_arguments")
    return value


def read_arguments(arguments: str) -> dict[str, Any]:
    """``-`` reads the arguments from stdin (at most 16 MiB); anything else is the JSON."""
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
                   "SERVER's requestTimeoutMs, which still bounds its setup).")
@verbose_option
@click.pass_context
def call(ctx: click.Context, server: str, tool: str, arguments: str, as_json: bool, timeout: float | None) -> None:
    """Call TOOL on SERVER with a JSON object of arguments (JSON "-": read it from stdin).

    On a terminal, a call that reports progress shows it on one line of stderr. Exit status:
    0 ok, 1 the tool reported an error, 2 usage or configuration, 3 connection or server,
    4 authentication needed.
    """
    args = read_arguments(arguments)

    async def called(extension: McpExtension, host: HostSession) -> Any:
        from hostlink.cli.progress_line import ProgressLine
        from hostlink.host import CancelSignal
        from hostlink.host.progress import CallWatch, watching
        from hostlink.mcp import render

        line = ProgressLine(sys.stderr) if sys.stderr.isatty() else None
        try:
            with watching(CallWatch(line, timeout)):
                result = await host.run_tool("mcp", {"action": "call", "server": server, "tool": tool, "args": args},
                                             CancelSignal())
        finally:
            if line is not None:
                line.clear()
        assert extension.runtime is not None
        failed = extension.runtime.snapshot(server).error if result.is_error else None
        return result, render.server_words(failed, verbose=verbose(ctx))

    result, words = with_server(ctx, server, called)
    code = (result.details or {}).get("error")
    if code is not None:  # hostlink failed, not the tool: the error, its kind, the server's words
        from hostlink.mcp.tool import SEE_TOOLS

        message = "\n".join(item.text for item in result.content if item.type == "text")
        message = message.replace(SEE_TOOLS, f"(see `{command_path()} tools {server}`)")
        if code == "timeout":
            message += "; wait longer with --timeout SECONDS (the call) or a larger requestTimeoutMs (setup and calls)"
        raise Fail(message, code, words, prefixed=False)
    _show(result, as_json)
    if result.is_error:
        sys.exit(EXIT_CODES["tool_error"])


def _show(result: ToolResult, as_json: bool) -> None:
    from hostlink.host.output import compact_json

    if as_json:
        shown: dict[str, Any] = {"isError": result.is_error, "content": [
            {"type": "text", "text": item.text} if item.type == "text"
            else {"type": "image", "mimeType": item.mime_type, "data": item.data} for item in result.content]}
        structured = (result.details or {}).get("structuredContent")
        if structured is not None:
            shown["structuredContent"] = structured
        click.echo(compact_json(shown))
        return
    for item in result.content:
        click.echo(item.text if item.type == "text" else f"[image {item.mime_type}, {len(item.data)} base64 chars]",
                   err=result.is_error)
