"""`hostlink mcp task SERVER ID` (and `llm mcp task`): read or end a task a call left running.

The `mcp` tool's `task` and `cancel` actions, from any process: the server must keep its tasks
across connections, which a Streamable HTTP server can. A stdio server's tasks end with the
process that started it, so for one this says so instead of starting a new one that knows none.
"""

from __future__ import annotations

import click

from hostlink.cli.mcp.session import load
from hostlink.cli.session import Fail


# A task id is the server's own text and may begin with "-" (FastMCP's are URL-safe base64): taken
# as the ID, not refused as an unknown option, so the command a handle prints works as it is.
@click.command(name="task", context_settings={"ignore_unknown_options": True})
@click.argument("server")
@click.argument("task_id", metavar="ID")
@click.option("--wait", type=click.FloatRange(0, 600), default=0, metavar="SECONDS",
              help="Wait up to SECONDS for the task to finish.")
@click.option("--cancel", is_flag=True, help="Ask the server to cancel the task.")
@click.option("--json", "as_json", is_flag=True, help="The result (or the handle) as one JSON object.")
@click.pass_context
def task_command(ctx: click.Context, server: str, task_id: str, wait: float, cancel: bool, as_json: bool) -> None:
    """Show the status or result of task ID on SERVER (a call's handle, or `call --detach`).

    Exit status as for `call`; a task still running exits 0 and says how to check it again.
    """
    from hostlink.cli.mcp.action import answer, run_action

    config = load(ctx).servers.get(server)
    if config is not None and config.transport == "stdio":
        raise Fail(f"MCP server {server!r} runs over stdio: its tasks ended with the process that started them "
                   "(the command that made the call); only a Streamable HTTP server keeps tasks for another "
                   "process to read", "usage")
    if cancel and wait:
        raise Fail("give --wait or --cancel, not both", "usage")
    action: dict[str, object] = {"action": "cancel" if cancel else "task", "server": server, "task": task_id}
    if wait:
        action["wait"] = wait
    result, words = run_action(ctx, server, action, as_json=as_json)
    answer(result, words, server, as_json=as_json, whole_hint=False)
