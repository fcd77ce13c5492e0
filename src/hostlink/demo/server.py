"""A small, honest MCP server over stdio, written with the official SDK.

It exercises every part of the `mcp` tool: plain and large text, an image, an error, a
tool meant only for an app audience (which the model must never see), a resource, a
resource template with completion, and a prompt.
"""

from __future__ import annotations

import struct
import zlib

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.mcpserver.utilities.types import Image
from mcp_types import (
    Completion,
    CompletionArgument,
    CompletionContext,
    PromptReference,
    ResourceTemplateReference,
)

COLOURS = ("amber", "azure", "crimson", "emerald", "indigo", "ivory")

server = MCPServer("hostlink-demo", version="1", instructions="A demo server for hostlink.")


@server.tool(description="Echo the given text back.")
def echo(text: str) -> str:
    return text


@server.tool(description="Add two integers.")
def add(a: int, b: int) -> int:
    return a + b


@server.tool(description="Return `lines` numbered lines of text, to show output bounding.")
def big_output(lines: int = 5000) -> str:
    if not 0 <= lines <= 1_000_000:
        raise ToolError("lines must be between 0 and 1000000")
    return "".join(f"line {number}: the quick brown fox jumps over the lazy dog\n" for number in range(lines))


@server.tool(description="Return a small solid-colour PNG image.")
def swatch(size: int = 8) -> Image:
    if not 1 <= size <= 256:
        raise ToolError("size must be between 1 and 256")
    return Image(data=_png(size, (0x33, 0x99, 0xCC)), format="png")


@server.tool(description="Always fails, to show how a tool error looks.")
def fail(reason: str = "the demo tool failed on purpose") -> str:
    raise ToolError(reason)


@server.tool(
    description="Refresh the app's widget; meant for an app UI, never for the model.",
    meta={"ui": {"visibility": ["app"]}},
)
def app_refresh() -> str:
    return "refreshed"


@server.resource("demo://readme", name="readme", mime_type="text/plain", description="About this server.")
def readme() -> str:
    return "hostlink demo server: tools echo, add, big_output, swatch, fail; a colour template; a prompt.\n"


@server.resource("demo://colour/{name}", name="colour", mime_type="text/plain", description="A named colour.")
def colour(name: str) -> str:
    if name not in COLOURS:
        raise ResourceError(f"unknown colour; known: {', '.join(COLOURS)}")
    return f"{name} is one of the demo colours\n"


@server.prompt(description="Ask for a short poem about a colour.")
def poem(colour: str) -> str:
    return f"Write a four-line poem about the colour {colour}."


@server.completion()  # type: ignore[no-untyped-call, untyped-decorator]  # the SDK leaves it unannotated
async def complete(ref: PromptReference | ResourceTemplateReference, argument: CompletionArgument,
                   context: CompletionContext | None) -> Completion | None:
    is_colour = (isinstance(ref, ResourceTemplateReference) and argument.name == "name") or (
        isinstance(ref, PromptReference) and argument.name == "colour"
    )
    if not is_colour:
        return None
    values = [name for name in COLOURS if name.startswith(argument.value)]
    return Completion(values=values, total=len(values), has_more=False)


def _png(size: int, rgb: tuple[int, int, int]) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    row = b"\x00" + bytes(rgb) * size
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    body = chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(row * size)) + chunk(b"IEND", b"")
    return b"\x89PNG\r\n\x1a\n" + body


def main() -> None:
    server.run("stdio")
