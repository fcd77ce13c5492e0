"""What hostlink's spans and metrics cost when no OpenTelemetry SDK is configured (the API's no-op
tracer, no meter provider), as a share of the call they are made for, measured in one run: the
spans and metrics of one `mcp` action (`hostlink.mcp.tracing`, `hostlink.mcp.metering`) against
the median of that action on the demo server, and those of one provider request
(`hostlink.claude_code.tracing`: the chat span, its four phases; the extension's metrics) against
the median of a provider request on the real `claude` CLI (when `node_modules` has it). The
hostlink column is the call plus their cost: the ratio is the share they add (goal ≤ 1.01x).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import ClassVar

import anyio

from bench.bench_mcp import open_hostlink
from bench.bench_provider import CLAUDE, MODEL, _request_rows
from bench.common import Row, median, private_runtime


def per_call(work: Callable[[], None], batches: int, size: int) -> float:
    """The median seconds of one `work()`, from `batches` timed loops of `size`."""
    times = []
    for _ in range(batches):
        started = time.perf_counter()
        for _ in range(size):
            work()
        times.append((time.perf_counter() - started) / size)
    return median(times)


class _Runtime:
    servers: ClassVar = {"demo": None}  # all action_span asks of a runtime


def mcp_spans() -> None:
    from hostlink.host import TextContent, ToolResult
    from hostlink.mcp.metering import measured
    from hostlink.mcp.tracing import action_span, traced

    args = {"action": "call", "server": "demo", "tool": "echo", "args": {"text": "hello"}}
    result = ToolResult(content=[TextContent("hello")])
    with action_span(_Runtime(), args) as span:  # type: ignore[arg-type]
        traced(span, args, result, None)
    measured(_Runtime(), args, result, 0.001)  # type: ignore[arg-type]


def provider_spans() -> None:
    from hostlink.claude_code.extension import _measured
    from hostlink.claude_code.tracing import RequestTrace
    from hostlink.host import AssistantMessage, Context, Done, TextContent, UserMessage

    trace = RequestTrace(MODEL, Context("system", [UserMessage([TextContent("hello")])]))
    for phase in ("claude start", "first token"):
        trace.phase(phase)
    trace.first_output()
    trace.phase("stop and cleanup")
    done = Done(AssistantMessage((TextContent("hi"),), model=MODEL))
    trace.finish([done], "fresh")
    _measured(MODEL, {"outcome": "done"}, 1.0, 0.5, done)


async def _mcp_call_seconds(quick: bool) -> float:
    from hostlink.host import CancelSignal

    async with AsyncExitStack() as stack:
        tool = await open_hostlink(stack, "demo", sys.executable, ["-m", "hostlink.demo"])
        request = {"action": "call", "server": "demo", "tool": "echo", "args": {"text": "hello"}}
        times = []
        for _ in range(3 if quick else 300):
            started = time.perf_counter()
            if (await tool.execute(request, CancelSignal())).is_error:
                raise RuntimeError("benchmark call failed (hostlink)")
            times.append(time.perf_counter() - started)
        return median(times[len(times) // 10:])  # the first tenth connects and warms up


def run(quick: bool) -> list[Row]:
    batches, size = (3, 100) if quick else (21, 2000)
    with private_runtime():
        call = anyio.run(_mcp_call_seconds, quick)
        spans = per_call(mcp_spans, batches, size)
        rows = [Row("no-SDK spans+metrics of an mcp call vs mcp call p50, demo echo", call * 1e6, (call + spans) * 1e6,
                    "us", "<= 1.01x")]
        if CLAUDE.exists():
            request = _request_rows(quick, follow_ups=False)[0].hostlink
            spans = per_call(provider_spans, batches, size) * 1000
            rows.append(Row("no-SDK spans+metrics of a provider request vs provider request", request,
                            request + spans, "ms", "<= 1.01x"))
    return rows
