"""`GET /metrics` of `hostlink mcp serve --http`: MCP calls by server, tool and outcome with their
latency, each configured server's connection state and its restarts and reconnects, in
Prometheus text format.

Labels are bounded by configuration, the same as the OpenTelemetry metrics'
(`hostlink.mcp.metering`): a configured server name (`other` otherwise), an advertised tool
(`MAX_TOOLS` names at most), the outcome `ok`, `tool_error` or hostlink's error code. States and
reconnects are read from the MCP client when scraped. The last calls are also kept for the
status page (`recent`), there with the names as the MCP host sent them, cut short: the page
shows them as text. Loaded only by the HTTP mode.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from typing import TYPE_CHECKING, Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from hostlink.mcp import STATES, ServerNumbers, call_labels
from hostlink.serve.status import Recent

if TYPE_CHECKING:
    from hostlink.host import ToolResult
_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 15.0, 60.0, 300.0)


class _Servers(Collector):
    """Read when scraped: one gauge per configured server and state (1 for the state it is in
    now), and each server's restarts after a crash and asked-for reconnects."""

    def __init__(self, numbers: Callable[[], ServerNumbers | None]) -> None:
        self._numbers = numbers

    def collect(self) -> Iterator[Metric]:
        states = GaugeMetricFamily("hostlink_mcp_server_state", "Each configured server's connection state (1: now)",
                                   labels=["server", "state"])
        reconnects = CounterMetricFamily("hostlink_mcp_reconnects", "Restarts after a crash (kind restart) and "
                                         "reconnects asked for (kind reconnect), by server", labels=["server", "kind"])
        numbers = self._numbers()
        for name, now in numbers.states() if numbers is not None else ():
            for state in STATES:
                states.add_metric([name, state], 1.0 if state == now else 0.0)
        for (name, kind), count in sorted((numbers.reconnects() if numbers is not None else {}).items()):
            reconnects.add_metric([name, kind], count)
        yield states
        yield reconnects


class GatewayMetrics:
    def __init__(self, numbers: Callable[[], ServerNumbers | None]) -> None:
        self.registry = registry = CollectorRegistry()
        self.calls = Counter("hostlink_mcp_calls", "MCP tool calls through the gateway, by server, tool and outcome",
                             ["server", "tool", "outcome"], registry=registry)
        self.latency = Histogram("hostlink_mcp_call_duration_seconds", "Time of each MCP tool call, by server",
                                 ["server"], buckets=_SECONDS, registry=registry)
        registry.register(_Servers(numbers))
        self._numbers = numbers
        self.recent = Recent()  # the status page's recent calls

    def record(self, arguments: dict[str, Any], result: ToolResult, seconds: float) -> None:
        """One `mcp` action of `call` (other actions are not tool calls)."""
        numbers = self._numbers()
        call = call_labels(numbers.runtime, arguments, result) if numbers is not None else None
        if call is None:
            return
        self.calls.labels(*call).inc()
        self.latency.labels(call.server).observe(seconds)
        named, called = arguments.get("server"), arguments.get("tool")
        self.recent.add(time=time.time() - seconds, server=named if isinstance(named, str) else None,
                        tool=called if isinstance(called, str) else None, outcome=call.outcome, ms=int(seconds * 1000))

    async def answer(self, send: Callable[[MutableMapping[str, Any]], Awaitable[None]]) -> None:
        body = generate_latest(self.registry)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", CONTENT_TYPE_LATEST.encode()), (b"cache-control", b"no-store"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
