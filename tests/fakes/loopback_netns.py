"""Run a third-party client that phones home (update checks, telemetry) where it can reach
nothing but one loopback port of this machine.

`outer SOCKET PORT` (in the test's own network namespace) forwards each connection made to
the Unix socket `SOCKET` to `127.0.0.1:PORT`. `inner PORT SOCKET -- COMMAND…` runs inside
`unshare -n`: it brings up the namespace's own loopback, forwards `127.0.0.1:PORT` there to
`SOCKET`, runs COMMAND and exits with its status. The client then sees the server at the same
address and port (so the server's `Host` check holds), and any other address is unreachable:
no packet leaves the namespace.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable

Opener = Callable[[], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        pass


def _forwarder(open_upstream: Opener) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
    async def forward(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await open_upstream()
        except OSError:
            writer.close()
            return
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        for each in (writer, up_writer):
            each.close()

    return forward


async def _outer(socket_path: str, port: int) -> None:
    server = await asyncio.start_unix_server(
        _forwarder(lambda: asyncio.open_connection("127.0.0.1", port)), path=socket_path)
    print("ready", flush=True)
    await server.serve_forever()


def _inner(port: int, socket_path: str, command: list[str]) -> int:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    loop = asyncio.new_event_loop()
    server = loop.run_until_complete(asyncio.start_server(
        _forwarder(lambda: asyncio.open_unix_connection(socket_path)), "127.0.0.1", port))
    threading.Thread(target=loop.run_forever, daemon=True).start()
    try:
        return subprocess.run(command).returncode
    finally:
        loop.call_soon_threadsafe(server.close)


def main(argv: list[str]) -> int:
    if argv[:1] == ["outer"]:
        asyncio.run(_outer(argv[1], int(argv[2])))
        return 0
    if argv[:1] == ["inner"] and argv[3:4] == ["--"]:
        return _inner(int(argv[1]), argv[2], argv[4:])
    print("usage: loopback_netns.py outer SOCKET PORT | inner PORT SOCKET -- COMMAND...", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
