"""A loopback HTTP proxy that adds `Authorization: Bearer <key>` to every request, for a
harness that cannot send headers (the MCP conformance suite) in front of an endpoint that
requires a key.

`python bearer_proxy.py LISTEN_PORT TARGET_PORT` with the key in `PROXY_KEY`. A `Host`
naming the proxy itself is rewritten to the target's, so the target's own Host check still
sees (and refuses) any other Host; `Origin` passes untouched. Responses (event streams
included) are piped back as they come.
"""

from __future__ import annotations

import asyncio
import os
import sys

LISTEN, TARGET = int(sys.argv[1]), int(sys.argv[2])
KEY = os.environ["PROXY_KEY"].encode()
OWN_HOSTS = {f"localhost:{LISTEN}".encode(), f"127.0.0.1:{LISTEN}".encode()}


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def requests(client: asyncio.StreamReader, upstream: asyncio.StreamWriter) -> None:
    try:
        while head := await client.readuntil(b"\r\n\r\n"):
            lines = head[:-4].split(b"\r\n")
            kept, length = [lines[0]], 0
            for line in lines[1:]:
                name, _, value = line.partition(b":")
                key = name.strip().lower()
                if key == b"authorization":
                    continue
                if key == b"host" and value.strip() in OWN_HOSTS:
                    line = b"Host: 127.0.0.1:%d" % TARGET
                if key == b"content-length":
                    length = int(value)
                kept.append(line)
            kept.append(b"Authorization: Bearer " + KEY)
            upstream.write(b"\r\n".join(kept) + b"\r\n\r\n" + (await client.readexactly(length) if length else b""))
            await upstream.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        upstream.close()


async def serve(client: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
    upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", TARGET)
    await asyncio.gather(requests(client, upstream_writer), pipe(upstream_reader, client_writer))


async def main() -> None:
    server = await asyncio.start_server(serve, "127.0.0.1", LISTEN)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


asyncio.run(main())
