"""One trace from an MCP host through `hostlink mcp serve` to the upstream server: the host's
span (the OpenTelemetry SDK's in-memory exporter in this process), the MCP SDK's `_meta` trace
context into the gateway, whose server span and `mcp call` span (no-ops there: the gateway's
application configured no SDK, which still carries the context on) parent its own call upstream;
the fixture server answers with the trace context it received."""

from __future__ import annotations

import json

import pytest
from opentelemetry import trace

from gateway_support import demo, fixture, stdio_gateway
from tracing_support import recording

pytestmark = pytest.mark.anyio


async def test_a_call_through_the_gateway_continues_the_hosts_trace(tmp_path):
    exporter = recording()
    async with stdio_gateway(tmp_path, {"demo": demo(), "fx": fixture("--traced")}) as client:
        with trace.get_tracer("the-host").start_as_current_span("agent step") as step:
            result = await client.call_tool("mcp", {"action": "call", "server": "fx", "tool": "trace_context"})
    assert not result.is_error, result.content
    received = json.loads(result.content[0].text.split("\n")[0])
    version, trace_id, parent, flags = received["traceparent"].split("-")
    assert int(trace_id, 16) == step.get_span_context().trace_id  # the host's trace, two hops on
    [host_call] = [span for span in exporter.get_finished_spans() if span.name == "MCP send tools/call mcp"]
    assert host_call.parent.span_id == step.get_span_context().span_id
    assert int(parent, 16) == host_call.context.span_id  # the gateway's spans record nothing, yet carry it
    assert version == "00" and int(flags, 16) & 1  # sampled
