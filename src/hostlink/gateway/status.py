"""What the status page of `hostlink mcp serve --http` shows (`hostlink.serve.status`): the
plan's last report (the account's, whichever process saw it last), the recent tool calls from
the metrics' ring, and each configured server's state and last error."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hostlink.host.output import one_line

if TYPE_CHECKING:
    from hostlink.gateway.metrics import GatewayMetrics
    from hostlink.mcp import McpRuntime

TITLE = "hostlink mcp serve"
COLUMNS = [["time", "time"], ["server", "server"], ["tool", "tool"], ["outcome", "outcome"], ["ms", "duration"]]
ERROR_CHARS = 300


def snapshot(runtime: McpRuntime | None, metrics: GatewayMetrics) -> dict[str, Any]:
    from hostlink.claude_code import PlanGuard, usage_as_json

    servers = []
    for name in sorted(runtime.servers) if runtime is not None else ():
        now = runtime.snapshot(name) if runtime is not None else None
        error = now.error if now is not None else None
        servers.append({"name": name, "transport": now.transport if now is not None else None,
                        "state": now.state if now is not None else None,
                        "error": one_line(str(error), ERROR_CHARS) if error is not None else None})
    plan = usage_as_json(PlanGuard("allow").latest(), "allow")["plan"]  # no provider here: no guard to show
    return {"plan": {"plan": plan, "extra_usage_guard": None}, "columns": COLUMNS, "recent": metrics.recent.rows(),
            "recent_title": "Recent tool calls", "servers": servers}
