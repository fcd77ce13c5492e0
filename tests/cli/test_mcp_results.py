"""`hostlink mcp call` shows a result as a person should read it (issue 37): a 41,600-byte file
read prints the file and nothing else, an image or a binary file prints one line and no
base64, and blocks come in the server's order. In this process (hostlink_here): what is shown
is the command's choice (tests/cli/test_mcp.py calls tools in a real `hostlink` process)."""

from __future__ import annotations

import base64
import json
import os
import sys
from pathlib import Path

import pytest

from mcp_cli_support import configure, hostlink_here

RESULTS = {"command": sys.executable, "args": [str(Path(__file__).parents[1] / "fakes" / "mcp_results_server.py")]}


def test_a_file_read_prints_the_file_once(tmp_path):
    env = configure(tmp_path, {"fs": RESULTS})
    notes = tmp_path / "notes.txt"
    notes.write_text("the quick brown fox jumps over the lazy dog 0123456\n" * 800)
    assert notes.stat().st_size == 41_600
    shown = hostlink_here(env, tmp_path, "mcp", "call", "fs", "read_text_file", json.dumps({"path": str(notes)}))
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == notes.read_text()  # at most its own size plus one line: here exactly the file


def test_media_prints_one_line_and_no_base64(tmp_path):
    env = configure(tmp_path, {"fs": RESULTS})
    picture, blob = tmp_path / "photo.png", tmp_path / "data.bin"
    picture.write_bytes(os.urandom(43_000))
    blob.write_bytes(b"hello binary world")
    image = hostlink_here(env, tmp_path, "mcp", "call", "fs", "read_media_file", json.dumps({"path": str(picture)}))
    encoded = base64.b64encode(picture.read_bytes()).decode()
    assert image.stdout == f"[image image/png, {len(encoded)} base64 chars]\n", image.stdout[:300]
    binary = hostlink_here(env, tmp_path, "mcp", "call", "fs", "read_media_file", json.dumps({"path": str(blob)}))
    assert binary.stdout.count("\n") == 1 and "not shown" in binary.stdout
    assert base64.b64encode(blob.read_bytes()).decode() not in binary.stdout
    mixed = hostlink_here(env, tmp_path, "mcp", "call", "fs", "mixed")
    assert mixed.stdout.splitlines()[0] == "before" and mixed.stdout.splitlines()[2] == "after"
    assert mixed.stdout.splitlines()[1].startswith("[image image/png, ")


def test_a_form_says_1_character():
    from hostlink.cli.terminal_ask import _value

    with pytest.raises(ValueError, match=r"^at least 1 character is needed$"):
        _value("", {"type": "string", "minLength": 1})
    with pytest.raises(ValueError, match=r"^at most 2 characters are allowed$"):
        _value("abc", {"type": "string", "maxLength": 2})


def test_pydantic_ai_gets_texts_and_images_in_the_results_order():
    from pydantic_ai import BinaryContent

    from hostlink.adapters.pydantic_ai.toolset import tool_return
    from hostlink.host import ImageContent, TextContent, ToolResult

    png = base64.b64encode(b"\x89PNG fake").decode()
    returned = tool_return(ToolResult([TextContent("before"), ImageContent(png, "image/png"), TextContent("after")]))
    assert returned == ["before", BinaryContent(b"\x89PNG fake", media_type="image/png"), "after"]


def test_a_form_answered_here_asks_again_saying_why_until_each_answer_fits():
    import io

    from hostlink.cli.terminal_ask import ask_here
    from hostlink.host import Question

    fields = {"type": "object", "required": ["name", "age"], "properties": {
        "name": {"type": "string"}, "age": {"type": "integer", "minimum": 18, "maximum": 130},
        "member": {"type": "boolean"}, "note": {"type": "string"},
        "days": {"type": "array", "items": {"enum": ["mon", "tue", "wed"]}, "minItems": 2}}}
    typed = ["x", "y",  # not y/n/c, then yes
             "", "Ada",  # required: asked again
             "12", "200", "36",  # below, above, within its bounds
             "maybe", "no",  # y or n
             "",  # optional: left out
             "mon,,", "mon, 3, mon"]  # one pick is too few; empty parts and repeats are ignored
    said = io.StringIO()
    answer = ask_here(Question(asker="asker", message="Who are you?", fields=fields),
                      io.StringIO("".join(f"{line}\n" for line in typed)), said)
    assert (answer.action, answer.content) == ("accept", {"name": "Ada", "age": 36, "member": False,
                                                          "days": ["mon", "wed"]})
    transcript = said.getvalue()
    for why in ("type y, n or c", "an answer is required", "at least 18 is needed", "at most 130 is needed",
                "answer y or n", "pick at least 2"):
        assert f"  {why}; try again (Ctrl-D cancels)" in transcript
    assert "note (text; Enter: leave empty): " in transcript
