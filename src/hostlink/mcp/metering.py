"""The MCP client's numbers, bounded once for both readers: the OpenTelemetry metrics every host
reports (`hostlink.host.meters`) and `GET /metrics` of the gateway.

A tool call is labelled by its server (a configured name, `other` otherwise), its tool (only a
call that reached its server, which advertised the tool; cut to a narrow set of characters and
to `MAX_TOOLS` names a process, `other` beyond) and its outcome (`ok`, `tool_error` or
hostlink's error code). The servers' states and reconnects are read from the client itself when
the numbers are collected, so nothing counts them twice.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from hostlink.host import meters

if TYPE_CHECKING:
    from hostlink.host import ToolResult
    from hostlink.mcp.runtime.clients import McpRuntime
    from hostlink.mcp.runtime.restart import Restarts

MAX_TOOLS = 200  # distinct tool labels in one process
STATES = ("idle", "connecting", "connected", "failed", "closed")
UNSAFE = re.compile(r"[^A-Za-z0-9._/-]")
_tools: set[str] = set()


class Call(NamedTuple):
    server: str
    tool: str
    outcome: str


def call_labels(runtime: McpRuntime, args: Mapping[str, Any], result: ToolResult) -> Call | None:
    """The labels of one `mcp` action of `call`; None for other actions (they are not tool calls)."""
    if args.get("action") != "call":
        return None
    server = args.get("server")
    server = server if isinstance(server, str) and server in runtime.servers else "other"
    error = (result.details or {}).get("error")
    outcome = str(error)[:40] if error else "tool_error" if result.is_error else "ok"
    return Call(server, "-" if error else tool_label(args.get("tool")), outcome)


def measured(runtime: McpRuntime, args: Mapping[str, Any], result: ToolResult, seconds: float) -> None:
    """An `mcp` action done, for the OpenTelemetry metrics (when the application reads them)."""
    if meters.recording() and (call := call_labels(runtime, args, result)) is not None:
        meters.mcp_call(*call, seconds)


def tool_label(name: Any) -> str:
    label = UNSAFE.sub("?", str(name))[:64]
    if label not in _tools and len(_tools) >= MAX_TOOLS:
        return "other"
    _tools.add(label)
    return label


class ServerNumbers:
    """One running client's servers as `hostlink.host.meters.Servers`: their states and reconnects."""

    def __init__(self, runtime: McpRuntime, restarts: Restarts) -> None:
        self.runtime, self._restarts = runtime, restarts

    def states(self) -> Iterator[tuple[str, str]]:
        for name in sorted(self.runtime.servers):
            yield name, self.runtime.snapshot(name).state

    def reconnects(self) -> Mapping[tuple[str, str], int]:
        """By server (configured now) and kind: `restart` after a crash, `reconnect` asked for."""
        servers = self.runtime.servers
        return {key: count for key, count in self._restarts.counts.items() if key[0] in servers}
