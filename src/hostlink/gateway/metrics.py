"""`GET /metrics` of `hostlink mcp serve --http`: MCP calls by server, tool and outcome with their
latency, and each configured server's connection state, in Prometheus text format.

Labels are bounded by configuration: a server label is a configured name (`other` otherwise);
a tool label is recorded only for a call that reached its server (the server advertised it), cut
to a narrow set of characters and to `MAX_TOOLS` names in all (`other` beyond); the outcome is
`ok`, `tool_error` or hostlink's error code. The last calls are also kept for the status page
(`recent`), there with the names as the MCP host sent them, cut short: the page shows them as
text. Loaded only by the HTTP mode.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from typing import TYPE_CHECKING, Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from hostlink.serve.status import Recent

if TYPE_CHECKING:
    from hostlink.host import ToolResult
    from hostlink.mcp import McpRuntime

MAX_TOOLS = 200  # distinct tool labels
STATES = ("idle", "connecting", "connected", "failed", "closed")
_UNSAFE = re.compile(r"[^A-Za-z0-9._/-]")
_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 15.0, 60.0, 300.0)


class _Servers(Collector):
    """One gauge per configured server and state, 1 for the state it is in now (read when scraped)."""

    def __init__(self, runtime: Callable[[], McpRuntime | None]) -> None:
        self._runtime = runtime

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily("hostlink_mcp_server_state", "Each configured server's connection state (1: now)",
                                   labels=["server", "state"])
        runtime = self._runtime()
        for name in sorted(runtime.servers) if runtime is not None else ():
            now = runtime.snapshot(name).state if runtime is not None else None
            for state in STATES:
                family.add_metric([name, state], 1.0 if state == now else 0.0)
        yield family


class GatewayMetrics:
    def __init__(self, runtime: Callable[[], McpRuntime | None]) -> None:
        self.registry = registry = CollectorRegistry()
        self.calls = Counter("hostlink_mcp_calls", "MCP tool calls through the gateway, by server, tool and outcome",
                             ["server", "tool", "outcome"], registry=registry)
        self.latency = Histogram("hostlink_mcp_call_duration_seconds", "Time of each MCP tool call, by server",
                                 ["server"], buckets=_SECONDS, registry=registry)
        registry.register(_Servers(runtime))
        self._runtime = runtime
        self._tools: set[str] = set()
        self.recent = Recent()  # the status page's recent calls

    def record(self, arguments: dict[str, Any], result: ToolResult, seconds: float) -> None:
        """One `mcp` action of `call` (other actions are not tool calls)."""
        if arguments.get("action") != "call":
            return
        runtime = self._runtime()
        server = arguments.get("server")
        server = server if isinstance(server, str) and runtime is not None and server in runtime.servers else "other"
        error = (result.details or {}).get("error")
        outcome = str(error) if error else "tool_error" if result.is_error else "ok"
        tool = "-" if error else self._tool(arguments.get("tool"))
        self.calls.labels(server, tool, outcome[:40]).inc()
        self.latency.labels(server).observe(seconds)
        named, called = arguments.get("server"), arguments.get("tool")
        self.recent.add(time=time.time() - seconds, server=named if isinstance(named, str) else None,
                        tool=called if isinstance(called, str) else None, outcome=outcome, ms=int(seconds * 1000))

    def _tool(self, name: Any) -> str:
        label = _UNSAFE.sub("?", str(name))[:64]
        if label not in self._tools and len(self._tools) >= MAX_TOOLS:
            return "other"
        self._tools.add(label)
        return label

    async def answer(self, send: Callable[[MutableMapping[str, Any]], Awaitable[None]]) -> None:
        body = generate_latest(self.registry)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", CONTENT_TYPE_LATEST.encode()), (b"cache-control", b"no-store"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
