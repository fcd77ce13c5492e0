"""MCP call overhead: a small `echo` call through the registered `mcp` tool (its
`execute`, as a host calls it) against the SDK's own `Client.call_tool` on an already
open session to another copy of the same stdio server, interleaved in one event loop; and
the throughput of 100 concurrent calls on one session, hostlink against the SDK alone.

Servers: the embedded demo server (`python -m hostlink.demo`) and the reference
`server-everything` (when `node_modules` holds it). Every server process is stopped at
the end of its block: the SDK client by leaving its context, hostlink by session shutdown.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio

from bench.common import Row, median, percentile, private_runtime

ROOT = Path(__file__).resolve().parent.parent
EVERYTHING = ROOT / "node_modules" / ".bin" / "mcp-server-everything"
CONCURRENT = 100


class _QuietNotifier:
    def notify(self, message: str, level: str = "info") -> None:
        pass


def servers() -> list[tuple[str, str, list[str], dict[str, Any]]]:
    """(label, command, args, echo arguments) of each server this checkout can run."""
    found = [("demo", sys.executable, ["-m", "hostlink.demo"], {"text": "hello"})]
    if EVERYTHING.exists():
        found.append(("everything", str(EVERYTHING), ["stdio"], {"message": "hello"}))
    return found


async def interleaved_async(baseline: Callable[[], Awaitable[object]], candidate: Callable[[], Awaitable[object]],
                            repeats: int) -> tuple[list[float], list[float]]:
    """`bench.common.interleaved` for coroutines on one loop: alternate which goes first."""
    times: dict[object, list[float]] = {baseline: [], candidate: []}
    for index in range(repeats):
        for function in (baseline, candidate) if index % 2 == 0 else (candidate, baseline):
            start = time.perf_counter()
            await function()
            times[function].append(time.perf_counter() - start)
    return times[baseline], times[candidate]


async def burst(call: Callable[[], Awaitable[object]], count: int) -> float:
    """Calls per second of `count` concurrent calls."""
    start = time.perf_counter()
    async with anyio.create_task_group() as group:
        for _ in range(count):
            group.start_soon(call)
    return count / (time.perf_counter() - start)


async def open_sdk(stack: AsyncExitStack, command: str, args: list[str]) -> Any:
    """A bare SDK client, set up the way hostlink sets up its own (auto mode, tools listed)."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    errlog = stack.enter_context(open(os.devnull, "w"))  # noqa: ASYNC230, SIM115 - /dev/null: instant; the stack closes it
    client = Client(stdio_client(StdioServerParameters(command=command, args=args), errlog=errlog), mode="auto")
    await stack.enter_async_context(client)
    await client.list_tools()
    return client


async def open_hostlink(stack: AsyncExitStack, label: str, command: str, args: list[str]) -> Any:
    """The registered `mcp` tool of a started host session; shutdown goes on the stack."""
    from hostlink.host.session import HostSession
    from hostlink.mcp.config.schema import StdioServer
    from hostlink.mcp.extension import McpExtension

    host = HostSession([McpExtension(servers={label: StdioServer(command=command, args=args)})])
    await host.start(cwd=Path.cwd(), project_trusted=False, notifier=_QuietNotifier())
    stack.push_async_callback(host.shutdown)
    return host.registry.tools["mcp"]


async def _measure(quick: bool) -> list[Row]:
    from hostlink.host import CancelSignal

    repeats = 3 if quick else 300
    warmup = 1 if quick else 20
    count = 10 if quick else CONCURRENT
    bursts = 1 if quick else 21
    rows = []
    for label, command, args, echo in servers():
        async with AsyncExitStack() as stack:
            client = await open_sdk(stack, command, args)
            tool = await open_hostlink(stack, label, command, args)
            request = {"action": "call", "server": label, "tool": "echo", "args": echo}

            async def sdk_call() -> None:
                if (await client.call_tool("echo", echo)).is_error:
                    raise RuntimeError("benchmark call failed (SDK)")

            async def hostlink_call() -> None:
                if (await tool.execute(request, CancelSignal())).is_error:
                    raise RuntimeError("benchmark call failed (hostlink)")

            await interleaved_async(sdk_call, hostlink_call, warmup)  # connect, list, warm caches
            base, ours = await interleaved_async(sdk_call, hostlink_call, repeats)
            rows.append(Row(f"mcp call p50, {label} echo", median(base) * 1000, median(ours) * 1000, "ms", "<= 1.05x"))
            rows.append(Row(f"mcp call p95, {label} echo", percentile(base, 0.95) * 1000,
                            percentile(ours, 0.95) * 1000, "ms", "<= 1.05x"))
            base_rates, our_rates = [], []
            for index in range(bursts):
                order = [(sdk_call, base_rates), (hostlink_call, our_rates)]
                for call, sink in order if index % 2 == 0 else reversed(order):
                    sink.append(await burst(call, count))
            rows.append(Row(f"mcp {count} concurrent calls, {label}", median(base_rates), median(our_rates),
                            "calls/s", ">= 0.9x"))
    return rows


def run(quick: bool) -> list[Row]:
    with private_runtime():
        return anyio.run(_measure, quick)
