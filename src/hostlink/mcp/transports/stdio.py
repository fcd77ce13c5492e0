"""The stdio transport: a child process speaking MCP on its stdin/stdout.

Its stderr goes to a private pipe whose last bytes classify a failed start in a fixed phrase
(the raw text is never repeated); the process and its stdin/stdout are
`ServerPipes`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.abc

from hostlink.host.platform.commands import CommandRefused
from hostlink.host.platform.pipes import make_pipe, read_pipe
from hostlink.mcp.errors import ConnectFailed, McpError, first_error
from hostlink.mcp.transports.stdio_pipes import ServerPipes

if TYPE_CHECKING:
    from mcp import Client

    from hostlink.mcp.config.schema import StdioServer

STDERR_TAIL_BYTES = 8192
STDERR_SETTLE_SECONDS = 0.5


class StderrTail:
    """The last bytes a stdio server wrote to stderr, read from a private pipe."""

    def __init__(self) -> None:
        self._read_fd, write_fd = make_pipe()
        self.writer = os.fdopen(write_fd, "w")  # handed to the child as its stderr
        self.data = b""
        self.eof = anyio.Event()

    def close_writer(self) -> None:
        """Drop our copy of the write end once the child holds its own, so EOF can arrive."""
        if not self.writer.closed:
            self.writer.close()

    def close(self) -> None:
        """Release both ends; called by the owner once the pump has stopped."""
        self.close_writer()
        if self._read_fd >= 0:
            os.close(self._read_fd)
            self._read_fd = -1

    async def pump(self) -> None:
        while True:
            chunk = await read_pipe(self._read_fd, 65536)
            if not chunk:
                self.eof.set()
                return
            self.data = (self.data + chunk)[-STDERR_TAIL_BYTES:]

    def text(self) -> str:
        """The tail as sanitized text, starting on a whole line when the start was cut."""
        from hostlink.host.output import strip_controls

        text = self.data.decode("utf-8", "replace")
        if len(self.data) >= STDERR_TAIL_BYTES and "\n" in text:
            text = text.split("\n", 1)[1]
        return strip_controls(text).strip("\n")

    def classify(self) -> str | None:
        """A fixed phrase for what the tail shows; the raw text is never repeated."""
        text = self.data.decode("utf-8", "replace").lower()
        if "command not found" in text or "no such file or directory" in text or "cannot find module" in text:
            return "the server reported a missing command or file"
        if "permission denied" in text or "eacces" in text:
            return "the server reported permission denied"
        if "traceback (most recent call last)" in text or re.search(r"\b(error|exception|panic)\b", text):
            return "the server crashed (it reported an error on stderr)"
        if self.eof.is_set():
            return "the server process exited"
        return None

    async def settle(self) -> None:
        """Give a dying server a moment to finish its stderr, so classification sees it."""
        with anyio.CancelScope(shield=True), anyio.move_on_after(STDERR_SETTLE_SECONDS):
            await self.eof.wait()


class StdioTransport:
    """One connection generation of a stdio server (see `hostlink.mcp.transports.Transport`)."""

    name: Literal["stdio"] = "stdio"
    challenges = 0  # a pipe never asks for credentials
    challenge = ""
    statuses: tuple[int, ...] = ()

    def __init__(self, config: StdioServer) -> None:
        self._config = config
        self.stderr: StderrTail | None = None
        self._pipes: ServerPipes | None = None

    @property
    def pid(self) -> int | None:
        return self._pipes.pid if self._pipes is not None else None

    @property
    def refusal(self) -> McpError | None:
        return self._pipes.refusal if self._pipes is not None else None

    @property
    def refusals(self) -> int:
        return self._pipes.refusals if self._pipes is not None else 0

    @property
    def ended(self) -> bool:
        return self._pipes is None or self._pipes.ended

    async def connect(self, stack: AsyncExitStack, group: anyio.abc.TaskGroup,
                      client_for: Callable[[Any, str], Client], mode: str) -> Client:
        from mcp import MCPError
        from mcp_types import CONNECTION_CLOSED

        self.stderr = tail = StderrTail()
        group.start_soon(tail.pump)
        self._pipes = ServerPipes(self._config, tail.writer)
        client = client_for(self._pipes.streams(), mode)
        try:
            await stack.enter_async_context(client)
        except Exception as exc:
            leaf = first_error(exc)
            if mode != "auto" or not (isinstance(leaf, MCPError) and leaf.code == CONNECTION_CLOSED):
                raise
            # Some older servers exit on any request before `initialize`, such as the
            # auto probe: one fresh process with the legacy handshake, and no more. What the
            # first one said is dropped, so a person reads the second's words once.
            tail.data = b""
            self._pipes = ServerPipes(self._config, tail.writer)
            client = client_for(self._pipes.streams(), "legacy")
            await stack.enter_async_context(client)
        tail.close_writer()
        return client

    async def abandon(self) -> None:
        """The setup did not finish: let the child's last words arrive for the error."""
        if self.stderr is not None:
            self.stderr.close_writer()
            await self.stderr.settle()

    async def settle(self) -> None:
        if self.stderr is not None:
            await self.stderr.settle()

    def release(self) -> None:
        if self.stderr is not None:
            self.stderr.close()

    def note(self) -> str:
        """`": <what stderr showed>"` for an error message, or nothing."""
        phrase = self.stderr.classify() if self.stderr is not None else None
        pipes = self._pipes
        if pipes is not None and pipes.noise:
            noise = (f"the server broke the protocol: it wrote {pipes.noise} line{'s' if pipes.noise > 1 else ''} "
                     "to stdout that are not JSON-RPC")
            phrase = f"{noise}; {phrase}" if phrase else noise
        return f": {phrase}" if phrase else ""

    def said(self) -> str | None:
        """The first non-JSON-RPC stdout line and the stderr tail, sanitized, for a person."""
        parts = []
        if self._pipes is not None and self._pipes.first_noise is not None:
            parts.append(f"stdout (not JSON-RPC): {self._pipes.first_noise}")
        tail = self.stderr.text() if self.stderr is not None else ""
        if tail:
            parts.append(tail)
        return "\n".join(parts) or None

    def setup_error(self, name: str, exc: BaseException) -> McpError | None:
        """A start failure only a child process has, as a safe error."""
        shown = Path(self._config.written_command).name  # as configured: a ${VAR} stays a reference
        if isinstance(exc, FileNotFoundError):
            if self._config.cwd is not None and not os.path.isdir(self._config.cwd):
                return ConnectFailed(f'MCP server {name!r}: its working directory ("cwd") does not exist')
            return ConnectFailed(f"MCP server {name!r}: command not found: {shown!r}")
        if isinstance(exc, PermissionError):
            return ConnectFailed(f"MCP server {name!r}: permission denied running {shown!r}")
        if isinstance(exc, CommandRefused):
            return ConnectFailed(f"MCP server {name!r}: {exc}")
        return None

