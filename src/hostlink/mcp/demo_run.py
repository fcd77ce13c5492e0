"""``hostlink demo``: one real host session against the embedded demo server, no config needed.

It goes through exactly the path an agent uses: the extension registers, the session
starts, the model-facing ``mcp`` tool lists the tools and calls ``echo``, and shutdown
stops the server process.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import click

from hostlink.host import CancelSignal, Registry, Session, ToolResult
from hostlink.mcp.extension import McpExtension


class _EchoNotifier:
    def notify(self, message: str, level: str = "info") -> None:
        click.echo(f"[{level}] {message}", err=True)


def _show(title: str, result: ToolResult) -> None:
    click.echo(f"== mcp {title}{' (error)' if result.is_error else ''}")
    for item in result.content:
        click.echo(item.text if item.type == "text" else f"[image {item.mime_type}, {len(item.data)} base64 chars]")


def run_demo() -> None:
    from hostlink.mcp.schema import StdioServer

    demo = StdioServer(command=sys.executable, args=["-m", "hostlink.demo"])
    extension = McpExtension(servers={"demo": demo})
    registry = Registry()
    extension.register(registry)
    tool = registry.tools["mcp"]

    async def session() -> bool:
        await registry.start_session(Session(cwd=Path.cwd(), project_trusted=False, notifier=_EchoNotifier()))
        try:
            listed = await tool.execute({"action": "tools", "server": "demo"}, CancelSignal())
            _show('action "tools"', listed)
            called = await tool.execute(
                {"action": "call", "server": "demo", "tool": "echo", "args": {"text": "hello from hostlink"}},
                CancelSignal(),
            )
            _show('action "call" (echo)', called)
            return not (listed.is_error or called.is_error)
        finally:
            await registry.shutdown_session()

    if not anyio.run(session):
        sys.exit(1)
