"""What is known about one MCP server's connection at one moment: the runtime publishes a new
snapshot on every change and callers read it without locks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from mcp_types import Tool

    from hostlink.mcp.errors import McpError

State = Literal["idle", "connecting", "connected", "failed", "closed"]


@dataclass(frozen=True)
class Snapshot:
    """What is known about one server's connection at one moment; replaced, never mutated."""

    server: str
    transport: Literal["stdio", "http"]
    state: State = "idle"
    protocol_version: str | None = None
    server_name: str | None = None  # as the server reports it: untrusted text
    server_version: str | None = None
    capabilities: frozenset[str] = frozenset()  # of tools, resources, prompts, completions
    tools: tuple[Tool, ...] | None = None  # the last complete listing, without what includeTools/excludeTools hide
    filtered: tuple[int, int] = (0, 0)  # how many tools includeTools and excludeTools hid from it
    error: McpError | None = None
    pid: int | None = None  # the stdio server process, when it could be identified
    task_tools: bool = False  # tools that run only as tasks can run here ("tasks" on, a shape both speak)
