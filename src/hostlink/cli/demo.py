"""`hostlink demo`: one real host session against the embedded demo server, no config needed.

It goes through exactly the path an agent uses: the host session starts the MCP extension,
the model-facing `mcp` tool lists the tools and calls `echo`, and shutdown stops the
server process.
"""

from __future__ import annotations

import sys

import click

from hostlink.cli.session import run_session
from hostlink.host import CancelSignal, ToolResult
from hostlink.host.session import HostSession


def _show(title: str, result: ToolResult) -> None:
    click.echo(f"== mcp {title}{' (error)' if result.is_error else ''}")
    for item in result.content:
        click.echo(item.text if item.type == "text" else f"[image {item.mime_type}, {len(item.data)} base64 chars]")


async def _tour(host: HostSession) -> bool:
    listed = await host.run_tool("mcp", {"action": "tools", "server": "demo"}, CancelSignal())
    _show('action "tools"', listed)
    called = await host.run_tool(
        "mcp", {"action": "call", "server": "demo", "tool": "echo", "args": {"text": "hello from hostlink"}},
        CancelSignal(),
    )
    _show('action "call" (echo)', called)
    return not (listed.is_error or called.is_error)


def run_demo() -> None:
    from hostlink.mcp import McpExtension, StdioServer

    demo = StdioServer(command=sys.executable, args=["-m", "hostlink.demo"])
    if not run_session([McpExtension(servers={"demo": demo})], _tour, lasting=True):
        sys.exit(1)
