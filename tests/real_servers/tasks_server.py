"""A FastMCP 4.1 server with the tasks extension (fastmcp-tasks, memory backend): the issue's
repros as tools. Runs in `.venv-tasks` (tests/real_servers/tasks-requirements.txt), over stdio
or, with `--http PORT`, Streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from fastmcp import Context, FastMCP
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension
from mcp_types import ElicitRequest, ElicitRequestFormParams, InputRequiredResult

mcp = FastMCP("slow")
mcp.add_extension(TasksExtension(url="memory://"))


@mcp.tool(task=TaskConfig(mode="required"))
async def build(target: str) -> str:
    """Build a target; runs only as a task."""
    return f"built {target}"


@mcp.tool(task=True)
async def crunch(seconds: float, ctx: Context) -> str:
    """Crunch for a while, saying how far it got."""
    steps = max(1, int(seconds * 2))
    for step in range(steps):
        await ctx.report_progress(step, steps, f"crunching {step + 1}/{steps}")
        await asyncio.sleep(seconds / steps)
    return f"crunched for {seconds:g} s"


@mcp.tool(task=True)
async def ask_name(ctx: Context) -> Any:
    """Ask for a name in the middle of a task (FastMCP's guard pattern: return the question)."""
    answers = ctx.input_responses
    if not answers:
        question = ElicitRequest(params=ElicitRequestFormParams(
            message="Which name?", requested_schema={"type": "object", "properties": {"name": {"type": "string"}},
                                                     "required": ["name"]}))
        return InputRequiredResult(input_requests={"name": question})
    answer = answers["name"]
    return f"hello {answer.content['name'] if answer.action == 'accept' else answer.action}"


@mcp.tool(task=True)
async def fail(reason: str) -> str:
    """A task that fails."""
    raise ValueError(f"failed on purpose: {reason}")


@mcp.tool()
async def quick(text: str) -> str:
    """A plain tool: never a task."""
    return text


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        mcp.run(transport="http", host="127.0.0.1", port=int(sys.argv[2]), show_banner=False)
    else:
        mcp.run(show_banner=False)
