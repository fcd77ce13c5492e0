"""What the model and a person see of a call's result (issue 37): each piece once and in the
server's order, structured content only where it adds something, never binary in the text —
through the real host path against a server over real stdio whose results have the shapes
real servers give (the filesystem server's `{"content": …}` structured copy among them)."""

from __future__ import annotations

import base64
import os
import sys
from pathlib import Path

import pytest

from hostlink.host import ImageContent, TextContent, ToolResult
from hostlink.mcp import render
from hostlink.mcp.config.schema import parse_server
from hostlink.mcp.extension import McpExtension
from mcp_runtime_support import Host, text

pytestmark = pytest.mark.anyio
RESULTS = str(Path(__file__).parents[1] / "fakes" / "mcp_results_server.py")
PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"


@pytest.fixture
async def host(tmp_path, runtime_dir):
    server = parse_server({"command": sys.executable, "args": [RESULTS]})
    async with Host(McpExtension(servers={"rs": server}), tmp_path) as running:
        yield running


def file_of(path: Path, size: int) -> str:
    """A text file of `size` bytes in lines of 52 (as the issue's 41,600-byte file: 800 lines)."""
    line = "the quick brown fox jumps over the lazy dog 0123456\n"
    body = (line * (size // len(line) + 1))[:size]
    path.write_text(body)
    return body


async def test_a_text_file_is_shown_once_not_again_as_its_structured_copy(host, tmp_path):
    notes = tmp_path / "notes.txt"
    body = file_of(notes, 41_600)
    result = await host.run(action="call", server="rs", tool="read_text_file", args={"path": str(notes)})
    assert not result.is_error and text(result) == body  # at most its own size: not the JSON, then the text
    assert result.details["structuredContent"] == {"content": body}  # programs still get it


async def test_an_image_file_is_an_image_and_its_base64_never_reaches_the_text(host, tmp_path):
    picture = tmp_path / "photo.png"
    picture.write_bytes(base64.b64decode(PNG_1X1) + os.urandom(43_000))
    result = await host.run(action="call", server="rs", tool="read_media_file", args={"path": str(picture)})
    images = [item for item in result.content if isinstance(item, ImageContent)]
    assert len(images) == 1 and base64.b64decode(images[0].data) == picture.read_bytes()
    assert text(result) == "" and len(result.content) == 1


async def test_a_binary_file_is_one_placeholder_line(host, tmp_path):
    blob = tmp_path / "data.bin"
    blob.write_bytes(b"hello binary world")
    result = await host.run(action="call", server="rs", tool="read_media_file", args={"path": str(blob)})
    assert text(result) == (f"[resource file://{blob}: binary application/octet-stream, "
                            f"{len(base64.b64encode(blob.read_bytes()))} base64 chars, not shown]")


async def test_blocks_keep_the_servers_order(host):
    result = await host.run(action="call", server="rs", tool="mixed")
    assert [item.type for item in result.content] == ["text", "image", "text"]
    assert (result.content[0].text, result.content[2].text) == ("before", "after")


async def test_structured_content_that_adds_something_is_shown_once_without_binary(host):
    extra = await host.run(action="call", server="rs", tool="extra")
    assert text(extra) == '{"id":7,"ok":true}\ncreated'
    pictured = await host.run(action="call", server="rs", tool="pictured")
    assert text(pictured) == ('{"name":"dot","picture":"[image image/png, 92 base64 chars, not shown]"}\ndrawn')
    assert PNG_1X1 not in text(pictured)
    assert pictured.details["structuredContent"]["picture"]["data"] == PNG_1X1  # unchanged for programs


async def test_parameters_show_their_real_types_and_errors_quote_json(host):
    result = await host.run(action="call", server="rs", tool="find",
                            args={"flag": "yes", "pattern": True, "mode": None, "tags": {"x": 1}})
    lines = text(result).splitlines()
    assert result.is_error and lines[0] == "arguments do not match the input schema of tool 'find':"
    assert set(lines[1:6]) == {
        '- "yes" is not of type "boolean" at flag',
        '- null is not one of ["fast", "full"] at mode',
        '- null is not of type "string" at mode',
        "- true is not valid under any of the given schemas at pattern",
        '- {"x": 1} is not of type "array" at tags',
    }
    assert lines[6] == ('parameters: pattern (string | null), mode (one of "fast", "full"), tags (array of string), '
                        "limit (integer | null), flag (boolean, required), where (Where)")


def test_counts_use_the_right_number():
    one = ToolResult([TextContent("x")])
    assert render.summary({"action": "call", "server": "s", "tool": "t"}, one) == "mcp call s/t: ok, 1 text (1 char)"
    two = ToolResult([TextContent("xy"), ImageContent(PNG_1X1, "image/png")])
    assert render.summary({"action": "call"}, two) == "mcp call: ok, 1 text (2 chars), 1 image"


async def test_a_connected_server_with_one_tool_says_1_tool(tmp_path, runtime_dir):
    server = parse_server({"command": sys.executable, "args": [RESULTS], "includeTools": ["extra"]})
    async with Host(McpExtension(servers={"rs": server}), tmp_path) as host:
        await host.run(action="tools", server="rs")
        line = render.status_lines(host.extension.runtime, ["rs"])[0]
    assert "1 tool," in line and "1 tools" not in line


def test_a_failed_servers_status_line_ends_with_its_error_on_one_bounded_line():
    from hostlink.mcp.errors import ConnectFailed
    from hostlink.mcp.runtime.snapshot import Snapshot

    failed = Snapshot("rs", "stdio", "failed", error=ConnectFailed("MCP server 'rs' could not start:\n" + "x" * 400))
    line = render.snapshot_line(failed)
    assert line.startswith("rs: failed: MCP server 'rs' could not start: xxx") and "\n" not in line
    assert len(line) <= len("rs: failed: ") + 300
    assert render.snapshot_line(Snapshot("rs", "stdio")) == "rs: idle"


def test_an_argument_error_names_the_parameters_as_people_write_their_types():
    assert render.parameters_line({"type": "object"}) == "(none)"
    assert render.parameters_line(None) == "(none)"
    nested = {"type": "array", "items": {"type": "array", "items": {"type": "array", "items": {
        "type": "array", "items": {"type": "array", "items": {"type": "string"}}}}}}
    schema = {"type": "object", "required": ["mode", "at"], "properties": {
        "mode": {"const": "fast"}, "at": {"$ref": "#/$defs/Place"}, "root": {"$ref": "#/"},
        "grid": nested, "note": {"description": "says nothing of its type"}, "flag": True}}
    assert render.parameters_line(schema) == (
        'mode ("fast", required), at (Place, required), root (any), '
        "grid (array of array of array of array of any), note (any), flag (any)")


class _Failed(Exception):
    def __init__(self, detail):
        super().__init__("failed")
        self.detail = detail


def test_what_a_server_said_is_its_last_lines_within_four_kib_and_says_how_much_was_left_out():
    assert render.server_words(_Failed("")) == [] and render.server_words(None) == []
    lines = [f"line {n} " + "x" * 1000 for n in range(6)]
    words = render.server_words(_Failed("\n".join(lines)))
    assert words[0] == "the server said (last 4 of 6 lines; --verbose for all):"
    assert words[1:] == [f"  {line}" for line in lines[2:]]  # the newest within 4 KiB
    assert render.server_words(_Failed("\n".join(lines)), verbose=True)[0] == "the server said:"
    (heading, only) = render.server_words(_Failed("y" * 5000))
    assert heading == "the server said:" and only == "  " + "y" * 4096  # one long line: its end, never nothing
