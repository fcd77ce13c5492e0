"""The span of one `mcp` tool action, around the SDK's own client spans (which nest under it).

It follows the MCP semantic conventions where they name something (`mcp.method.name`,
`gen_ai.tool.name`, `gen_ai.operation.name`) and says which configured server it went to.
Bounded by configuration, never by the model's text: a server name is recorded only when it is
configured, a tool name only when the server advertised it (the call got past hostlink's
checks), cut to a narrow set of characters. Arguments and results only under the GenAI
convention's content switch.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from hostlink.host import ToolResult, telemetry
from hostlink.mcp.metering import UNSAFE

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from hostlink.mcp.runtime.clients import McpRuntime

# the action's MCP method, where it is one request to the server
METHODS = {"tools": "tools/list", "call": "tools/call", "resources": "resources/list",
           "templates": "resources/templates/list", "read": "resources/read", "prompts": "prompts/list",
           "prompt": "prompts/get", "complete": "completion/complete"}


@contextmanager
def action_span(runtime: McpRuntime, args: Mapping[str, Any]) -> Iterator[Span]:
    if not telemetry.recording():
        yield telemetry.idle()
        return
    action = args.get("action")
    action = action if isinstance(action, str) and action in (*METHODS, "status", "auth", "reconnect") else "invalid"
    attributes: dict[str, Any] = {"hostlink.mcp.action": action}
    if action in METHODS:
        attributes["mcp.method.name"] = METHODS[action]
    if action == "call":
        attributes["gen_ai.operation.name"] = "execute_tool"
    server = args.get("server")
    if isinstance(server, str) and server in runtime.servers:
        attributes["hostlink.mcp.server"] = server
    if action == "call" and telemetry.capture_content():
        attributes["gen_ai.tool.call.arguments"] = telemetry.content(args.get("args") or {})
    with telemetry.span(f"mcp {action}", attributes) as span:
        yield span


def traced(span: Span, args: Mapping[str, Any], result: ToolResult, error: str | None) -> None:
    """What the action came to: hostlink's error code, or the tool's own error; a call that got
    past hostlink's checks names its (advertised) tool."""
    if not span.is_recording():
        return
    if error is not None:
        telemetry.fail(span, error)
        return
    if args.get("action") == "call":
        span.set_attribute("gen_ai.tool.name", UNSAFE.sub("?", str(args.get("tool")))[:64])
        if telemetry.capture_content():
            span.set_attribute("gen_ai.tool.call.result", telemetry.content([getattr(part, "text", "")
                                                                             for part in result.content]))
    if result.is_error:
        telemetry.fail(span, "tool_error")
