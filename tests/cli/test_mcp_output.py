"""`hostlink mcp call … --output FILE` / `--full` (issue 15, problem 6): the whole
sanitized result instead of the 50 KiB inline window, against the demo server and the
fixture server (escape-laden lines). A real `hostlink` process, with a stdio demo server, where its
stdout is what is under test (a pipe, a terminal); what the command writes to a file or refuses, in
this process (hostlink_here), most against the module's one demo server over HTTP."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from hostlink.cli.mcp.output import Sink, write_whole
from hostlink.cli.session import Fail
from hostlink.host import TextContent, ToolResult
from hostlink.host.output import OutputSession, bound_content
from mcp_cli_support import configure, hostlink, hostlink_here
from mcp_runtime_support import FIXTURE, fixture_children

DEMO = {"command": sys.executable, "args": ["-m", "hostlink.demo"]}
FX = {"command": sys.executable, "args": [FIXTURE]}
BIG = ("big_output", '{"lines": 5000}')
FOX = "the quick brown fox jumps over the lazy dog"
CONTROLS = set(range(0x20)) - {0x09, 0x0A} | {0x7F} | set(range(0x80, 0xA0))


@pytest.fixture
def demo_web(demo_http):
    """The demo server's config entry: the module's one demo server over HTTP."""
    return {"url": demo_http.url}


def expected_fox(lines: int) -> str:
    return "".join(f"line {number}: {FOX}\n" for number in range(lines))


def test_a_redirected_call_is_cut_and_says_how_to_get_all(tmp_path):
    env = configure(tmp_path, {"demo": DEMO})
    cut = hostlink(env, tmp_path, "mcp", "call", "demo", *BIG)
    assert cut.returncode == 0
    assert cut.stdout.count("\n") < 1000 and "full output not kept" in cut.stdout
    assert "--output FILE or --full writes it whole" in cut.stderr


def test_output_file_gets_every_line_and_is_private(tmp_path, demo_web):
    env = configure(tmp_path, {"demo": demo_web})
    target = tmp_path / "result.txt"
    written = hostlink_here(env, tmp_path, "mcp", "call", "demo", *BIG, "--output", str(target))
    assert (written.returncode, written.stdout, written.stderr) == (0, "", "")
    assert target.read_text() == expected_fox(5000)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    # an existing file is overwritten, its own mode kept
    target.chmod(0o640)
    again = hostlink_here(env, tmp_path, "mcp", "call", "demo", "big_output", '{"lines": 3}', "-o", str(target))
    assert again.returncode == 0 and target.read_text() == expected_fox(3)
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    as_json = tmp_path / "result.json"
    assert hostlink_here(env, tmp_path, "mcp", "call", "demo", *BIG, "--json", "-o", str(as_json)).returncode == 0
    shown = json.loads(as_json.read_text())
    assert shown["isError"] is False and shown["content"][0]["text"] == expected_fox(5000)
    assert list(tmp_path.joinpath("rt").rglob("overflow-*")) == []  # the private copy is gone


def test_full_writes_everything_to_a_pipe_and_is_refused_on_a_terminal(tmp_path):
    env = configure(tmp_path, {"demo": DEMO})
    full = hostlink(env, tmp_path, "mcp", "call", "demo", *BIG, "--full")
    assert (full.returncode, full.stderr) == (0, "")
    assert full.stdout == expected_fox(5000)
    master, slave = os.openpty()
    try:
        refused = subprocess.run(
            [sys.executable, "-c", "from hostlink.cli import main; main()", "mcp", "call", "demo", *BIG, "--full"],
            stdout=slave, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path, timeout=60)
    finally:
        os.close(slave)
        os.close(master)
    assert refused.returncode == 2
    assert "--full writes the whole result to a pipe or a file, not to a terminal" in refused.stderr
    both = hostlink_here(env, tmp_path, "mcp", "call", "demo", *BIG, "--full", "-o", str(tmp_path / "x"))
    assert both.returncode == 2 and "not both" in both.stderr


def test_whole_output_is_still_sanitized(tmp_path):
    env = configure(tmp_path, {"fx": FX})
    target = tmp_path / "escapes.txt"
    written = hostlink_here(env, tmp_path, "mcp", "call", "fx", "many_escapes", '{"lines": 3000}', "-o", str(target))
    assert written.returncode == 0, written.stderr
    data = target.read_text()
    lines = data.splitlines()
    assert len(lines) == 3000 and len(data.encode()) > 50 * 1024
    assert not CONTROLS & {ord(char) for char in data}
    assert lines[2999].startswith("line 2999: plain red ") and "evil.example" not in data
    assert fixture_children() == []


@pytest.mark.parametrize("where", ["directory", "symlink", "fifo", "missing-dir"])
def test_output_refuses_what_is_not_a_regular_file_before_calling(tmp_path, demo_web, where):
    env = configure(tmp_path, {"demo": demo_web})
    target = tmp_path / where
    if where == "directory":
        target.mkdir()
    elif where == "symlink":
        (tmp_path / "real.txt").write_text("keep me")
        target.symlink_to(tmp_path / "real.txt")
    elif where == "fifo":
        os.mkfifo(target)
    else:
        target = tmp_path / "nowhere" / "file.txt"
    refused = hostlink_here(env, tmp_path, "mcp", "call", "demo", *BIG, "-o", str(target))
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.startswith(f"hostlink mcp: --output {str(target)!r} ")
    assert "not written" in refused.stderr or "does not exist" in refused.stderr
    if where == "symlink":
        assert (tmp_path / "real.txt").read_text() == "keep me"


def test_a_failed_call_leaves_no_file_it_created(tmp_path, demo_web):
    env = configure(tmp_path, {"demo": demo_web})
    target = tmp_path / "never.txt"
    failed = hostlink_here(env, tmp_path, "mcp", "call", "demo", "big_outptu", "{}", "-o", str(target))
    assert failed.returncode == 2 and "did you mean 'big_output'" in failed.stderr
    assert not target.exists()
    kept = tmp_path / "kept.txt"
    kept.write_text("earlier result\n")
    assert hostlink_here(env, tmp_path, "mcp", "call", "demo", "big_outptu", "{}", "-o", str(kept)).returncode == 2
    assert kept.read_text() == "earlier result\n"  # a failed call leaves an existing file as it was
    tool_error = hostlink_here(env, tmp_path, "mcp", "call", "demo", "fail", "{}", "-o", str(target))
    assert tool_error.returncode == 1 and "failed on purpose" in target.read_text()


def test_a_call_refused_before_it_starts_writes_nothing_anywhere(tmp_path):
    env = configure(tmp_path, {"demo": DEMO})
    target, kept = tmp_path / "never.txt", tmp_path / "kept.txt"
    kept.write_text("earlier result\n")
    for sink in ((), ("-o", str(target)), ("-o", str(kept)), ("--full",)):
        refused = hostlink_here(env, tmp_path, "mcp", "call", "nosuch", "echo", "{}", *sink)
        assert refused.returncode == 2 and "unknown MCP server 'nosuch'" in refused.stderr
        assert refused.stdout == ""  # --full: not a byte of a result
    assert not target.exists() and kept.read_text() == "earlier result\n"


def test_a_result_over_the_session_budget_is_refused_not_cut(tmp_path, runtime_dir):
    session = OutputSession(budget=64 * 1024)
    result = ToolResult(content=bound_content([TextContent("x" * 99 + "\n")] * 1000, session))
    assert session.overflows == ["session overflow budget of 50 MiB reached"]
    with open(tmp_path / "out", "wb") as stream, pytest.raises(Fail) as raised:
        write_whole(result, session, Sink(stream), as_json=False)
    assert raised.value.code == "output_too_large" and raised.value.exit_code == 1
    session.close()
