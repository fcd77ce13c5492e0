"""The gateway on stdio: the SDK's stdio transport over pipe streams of the event loop.

The SDK's own stdin reader runs in a worker thread, which nothing can cancel while the MCP
host keeps the pipe open (a stop signal would wait for the host), and its stdout writer
hands every write and flush to a worker thread (two thread hops per answer, a few
milliseconds under load). When fd 0 and fd 1 are pipes (as an MCP host starts a server),
both are read and written by the loop instead; fd 1 itself then points at stderr while
serving, as the SDK arranges it, so nothing else can write on the protocol stream. Windows'
event loop cannot read an inherited anonymous pipe (`hostlink.host.platform.pipes`), so
there the SDK's threads do it: the server still ends when stdin closes, while a stop request
waits for the host to close the pipe.
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hostlink.host.platform.pipes import LOOP_READS_PIPES

if TYPE_CHECKING:
    from hostlink.gateway.server import Gateway

MAX_LINE_BYTES = 64 * 1024 * 1024  # one JSON-RPC message; a longer line ends the session


class _StdinLines:
    """The lines of fd 0 as an async iterator, read without a thread when fd 0 is a pipe."""

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=MAX_LINE_BYTES)
        source = os.fdopen(os.dup(0), "rb", buffering=0)
        transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), source)
        try:
            while line := await reader.readline():
                yield line.decode("utf-8", errors="replace")
        finally:
            transport.close()


class _StdoutLines:
    """The protocol stream (a duplicate of fd 1) written by the loop; fd 1 points at stderr."""

    def __init__(self, transport: asyncio.WriteTransport, protocol: Any) -> None:
        self._transport = transport
        self._protocol = protocol

    @classmethod
    async def open(cls) -> _StdoutLines:
        loop = asyncio.get_running_loop()
        target = os.fdopen(os.dup(1), "wb", buffering=0)
        os.dup2(2, 1)  # stray writes to fd 1 now reach stderr, never the protocol stream
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, target)
        return cls(transport, protocol)

    async def write(self, text: str) -> None:
        self._transport.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._protocol._drain_helper()

    def close(self) -> None:
        self._transport.close()


def _pipe_like(fd: int) -> bool:
    if not LOOP_READS_PIPES:
        return False
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


async def serve_stdio(gateway: Gateway, *, cwd: Path, environ: Mapping[str, str], trust_flag: bool) -> None:
    """Serve until stdin closes or a stop signal (raises Terminated); every server stopped
    and every private file removed either way."""
    from mcp.server.stdio import stdio_server

    server = gateway.server()  # before the session starts importing the SDK in the background

    async def work() -> None:
        await gateway.start(cwd, environ, trust_flag=trust_flag)
        stdin = _StdinLines() if _pipe_like(0) else None
        stdout = await _StdoutLines.open() if _pipe_like(1) else None
        try:
            streams = stdio_server(stdin=stdin, stdout=stdout)  # type: ignore[arg-type]  # duck-typed anyio AsyncFiles
            async with streams as (read, write):
                await gateway.serve(server, read, write)
        finally:
            if stdout is not None:
                stdout.close()

    await gateway.host.run(work)
