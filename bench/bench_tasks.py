"""MCP tasks: a call of a tool that answers at once, run by the server as a task (the server's
entry has `"tasks": true`: the call, then `tasks/get` until it is done) against the same call run
inline (an entry without the opt-in: the server runs an optional task tool in the foreground),
through the registered `mcp` tool on two open sessions to the FastMCP 4.1 task server
(tests/real_servers/tasks_server.py in `.venv-tasks`), interleaved. The row is left out when
`.venv-tasks` is not installed (`scripts/setup-test`).
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path

import anyio

from bench.bench_mcp import _QuietNotifier, interleaved_async, open_hostlink
from bench.common import Row, median, private_runtime

ROOT = Path(__file__).resolve().parent.parent
PYTHON = ROOT / ".venv-tasks" / "bin" / "python"
SERVER = str(ROOT / "tests" / "real_servers" / "tasks_server.py")


async def _measure(quick: bool) -> list[Row]:
    from hostlink.host import CancelSignal
    from hostlink.host.session import HostSession
    from hostlink.mcp.config.schema import parse_server
    from hostlink.mcp.extension import McpExtension

    repeats, warmup = (3, 1) if quick else (60, 5)
    async with AsyncExitStack() as stack:
        plain = await open_hostlink(stack, "plain", str(PYTHON), [SERVER])
        host = HostSession([McpExtension(servers={"tasked": parse_server(
            {"command": str(PYTHON), "args": [SERVER], "tasks": True})})])
        await host.start(cwd=Path.cwd(), project_trusted=False, notifier=_QuietNotifier())
        stack.push_async_callback(host.shutdown)
        tasked = host.registry.tools["mcp"]

        async def inline() -> None:
            request = {"action": "call", "server": "plain", "tool": "crunch", "args": {"seconds": 0}}
            if (await plain.execute(request, CancelSignal())).is_error:
                raise RuntimeError("benchmark call failed (inline)")

        async def as_task() -> None:
            request = {"action": "call", "server": "tasked", "tool": "crunch", "args": {"seconds": 0}}
            result = await tasked.execute(request, CancelSignal())
            if result.is_error or "task" in (result.details or {}):
                raise RuntimeError("benchmark call failed (task)")

        await interleaved_async(inline, as_task, warmup)
        base, ours = await interleaved_async(inline, as_task, repeats)
    return [Row("mcp call run as a task, crunch 0 s (FastMCP)", median(base) * 1000, median(ours) * 1000, "ms",
                "<= 1.1x + one poll")]


def run(quick: bool) -> list[Row]:
    if not PYTHON.exists():
        return []
    with private_runtime():
        return anyio.run(_measure, quick)
