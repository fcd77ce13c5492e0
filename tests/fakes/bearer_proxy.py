"""A loopback HTTP proxy that adds `Authorization: Bearer <key>` to every request, for a
harness that cannot send headers (the MCP conformance suite) in front of an endpoint that
requires a key.

`python bearer_proxy.py LISTEN_PORT TARGET_PORT [SERVER]` with the key in `PROXY_KEY`. A
`Host` naming the proxy itself is rewritten to the target's, so the target's own Host check
still sees (and refuses) any other Host; `Origin` passes untouched. Responses (event streams
included) are passed back as they come.

With SERVER, the proxy also plays a host that calls the names the gateway's tools face
gives that server's items (`SERVER__<name>`, `hostlink://SERVER/<uri>`, see
hostlink.gateway.naming): the conformance suite calls its fixture's own names, which it never
lists. The names in requests (tools/call, prompts/get, resources/read, (un)subscribe,
completion/complete) get the prefix; in responses the prefix is taken off again.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

LISTEN, TARGET = int(sys.argv[1]), int(sys.argv[2])
SERVER = sys.argv[3] if len(sys.argv) > 3 else None
KEY = os.environ["PROXY_KEY"].encode()
OWN_HOSTS = {f"localhost:{LISTEN}".encode(), f"127.0.0.1:{LISTEN}".encode()}
NAMED = {"tools/call": "name", "prompts/get": "name"}
URIS = ("resources/read", "resources/subscribe", "resources/unsubscribe")


def prefixed(body: bytes) -> bytes:
    """A JSON-RPC request body with SERVER's names as the gateway gives them."""
    try:
        message = json.loads(body)
    except ValueError:
        return body
    for request in message if isinstance(message, list) else [message]:
        params = request.get("params") if isinstance(request, dict) else None
        if not isinstance(params, dict):
            continue
        method = request.get("method")
        if method in NAMED and isinstance(params.get("name"), str):
            params["name"] = f"{SERVER}__{params['name']}"
        elif method in URIS and isinstance(params.get("uri"), str):
            params["uri"] = f"hostlink://{SERVER}/{params['uri']}"
        elif method == "completion/complete" and isinstance(params.get("ref"), dict):
            ref = params["ref"]
            if isinstance(ref.get("name"), str):
                ref["name"] = f"{SERVER}__{ref['name']}"
            if isinstance(ref.get("uri"), str):
                ref["uri"] = f"hostlink://{SERVER}/{ref['uri']}"
    return json.dumps(message).encode()


def unprefixed(data: bytes) -> bytes:
    return data.replace(f'"{SERVER}__'.encode(), b'"').replace(f"hostlink://{SERVER}/".encode(), b"")


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def responses(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Responses with SERVER's prefix taken off their JSON: a body of known length whole,
    a chunked one (an event stream: an event a chunk) chunk by chunk."""
    try:
        while head := await reader.readuntil(b"\r\n\r\n"):
            lines = head[:-4].split(b"\r\n")
            fields = {name.strip().lower(): value.strip() for name, _, value in
                      (line.partition(b":") for line in lines[1:])}
            if b"content-length" in fields:
                body = unprefixed(await reader.readexactly(int(fields[b"content-length"])))
                lines = [line for line in lines if not line.lower().startswith(b"content-length:")]
                writer.write(b"\r\n".join([*lines, b"Content-Length: %d" % len(body)]) + b"\r\n\r\n" + body)
            elif fields.get(b"transfer-encoding") == b"chunked":
                writer.write(head)
                while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
                    chunk = unprefixed(await reader.readexactly(size))
                    await reader.readexactly(2)
                    writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    await writer.drain()
                await reader.readuntil(b"\r\n")
                writer.write(b"0\r\n\r\n")
            else:
                writer.write(head)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
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
                    continue
                kept.append(line)
            body = await client.readexactly(length) if length else b""
            if SERVER and body:
                body = prefixed(body)
            kept.append(b"Authorization: Bearer " + KEY)
            if length:
                kept.append(b"Content-Length: %d" % len(body))
            upstream.write(b"\r\n".join(kept) + b"\r\n\r\n" + body)
            await upstream.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        upstream.close()


async def serve(client: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
    upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", TARGET)
    back = responses(upstream_reader, client_writer) if SERVER else pipe(upstream_reader, client_writer)
    await asyncio.gather(requests(client, upstream_writer), back)


async def main() -> None:
    server = await asyncio.start_server(serve, "127.0.0.1", LISTEN)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


asyncio.run(main())
