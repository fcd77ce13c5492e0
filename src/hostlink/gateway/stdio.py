"""The gateway on stdio: the SDK's stdio transport, with a stdin reader that a stop signal
can interrupt (the SDK's own reads stdin in a worker thread, which nothing can cancel while
the MCP host keeps the pipe open)."""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

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


def _pipe_like(fd: int) -> bool:
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


async def serve_stdio(gateway: Gateway, *, cwd: Path, environ: Mapping[str, str], trust_flag: bool) -> None:
    """Serve until stdin closes or a stop signal (raises Terminated); every server stopped
    and every private file removed either way."""
    from mcp.server.stdio import stdio_server

    server = gateway.server()  # before the session starts importing the SDK in the background

    async def work() -> None:
        await gateway.start(cwd, environ, trust_flag=trust_flag)
        stdin = _StdinLines() if _pipe_like(sys.stdin.fileno()) else None
        async with stdio_server(stdin=stdin) as (read, write):  # type: ignore[arg-type]
            await server.run(read, write, gateway.initialization_options(server))

    await gateway.host.run(work)
