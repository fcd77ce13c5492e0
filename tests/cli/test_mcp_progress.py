"""`hostlink mcp call` and long calls (issue 15, problem 3): progress is requested and shown
on a terminal, progress restarts the timeout up to a hard maximum, `--timeout` sets it.

With the real `server-everything` (`trigger-long-running-operation` reports progress
`steps` times over `duration` seconds) and the fixture server (progress messages laden
with escapes). The terminal is a real pseudo-terminal, for a real `hostlink` process; without
one, the command runs in this process (hostlink_here): the timeouts are the command's own.
"""

from __future__ import annotations

import json
import sys
import time

import anyio
import pytest

from hostlink.cli.progress_line import ERASE_LINE
from hostlink.host.progress import CallWatch, watching
from mcp_cli_support import EVERY, configure, hostlink_here, needs_everything
from mcp_runtime_support import FIXTURE, fixture_children
from terminal_support import on_a_terminal

LONG = "trigger-long-running-operation"
FX = {"command": sys.executable, "args": [FIXTURE]}


@needs_everything
def test_a_terminal_sees_the_progress_line_redrawn_and_cleared(tmp_path):
    env = configure(tmp_path, {"everything": EVERY})
    code, out, seen = on_a_terminal(env, tmp_path, "mcp", "call", "everything", LONG, '{"duration": 2, "steps": 4}')
    assert code == 0, seen
    assert out == "Long running operation completed. Duration: 2 seconds, Steps: 4.\n"
    every = ["[#####...............] 1/4", "[##########..........] 2/4",
             "[###############.....] 3/4", "[####################] 4/4"]
    drawn = seen.decode().split(ERASE_LINE)
    assert drawn[0] == "" and drawn[-1] == ""  # each draw starts by erasing the line, and the end erases it
    # in order; a redraw within 0.1 s of the last is skipped, so a busy machine may show fewer
    assert len(drawn[1:-1]) >= 2 and drawn[1:-1] == [line for line in every if line in drawn[1:-1]], seen


def test_a_progress_message_is_drawn_sanitized_and_bounded(tmp_path):
    env = {**configure(tmp_path, {"fx": FX}), "COLUMNS": "60"}
    code, out, seen = on_a_terminal(env, tmp_path, "mcp", "call", "fx", "progress", '{"steps": 3}')
    assert (code, out) == (0, "done after 3 steps\n"), seen
    lines = seen.decode().split(ERASE_LINE)
    assert lines[0] == "" and lines[-1] == ""  # erased at the start of each draw and at the end
    drawn = lines[1:-1]
    assert drawn and drawn[0].startswith("[#######.............] 1/3 step 1 plain red")
    for line in drawn:
        assert len(line) <= 59 and line.isprintable(), repr(line)
        assert "window title" not in line and "evil.example" not in line
    assert fixture_children() == []


def test_with_verbose_the_servers_log_messages_are_lines_on_stderr(tmp_path):
    env = configure(tmp_path, {"fx": FX})
    quiet = hostlink_here(env, tmp_path, "mcp", "call", "fx", "logs")
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "logged\n", "")  # no -v: none shown
    told = hostlink_here(env, tmp_path, "mcp", "call", "fx", "logs", "-v")
    assert (told.returncode, told.stdout) == (0, "logged\n"), told.stderr
    lines = told.stderr.splitlines()
    assert [line.split(":")[0] for line in lines] == ["fx/deep log debug", "fx/worker log info", "fx log warning",
                                                       "fx log error"]
    assert all(line.isprintable() and len(line) <= 330 for line in lines), lines
    assert lines[3] == 'fx log error: {"code":7,"why":"\\u001b[2Jcleared"}'


def test_without_a_terminal_no_progress_line_is_drawn(tmp_path):
    env = configure(tmp_path, {"fx": FX})
    called = hostlink_here(env, tmp_path, "mcp", "call", "fx", "progress", '{"steps": 2}')
    assert (called.returncode, called.stdout, called.stderr) == (0, "done after 2 steps\n", "")


@needs_everything
def test_a_call_that_reports_progress_outlives_its_timeout(tmp_path):
    env = configure(tmp_path, {"everything": EVERY})
    started = time.monotonic()
    called = hostlink_here(env, tmp_path, "mcp", "call", "everything", LONG, '{"duration": 4, "steps": 8}',
                      "--timeout", "1.5")
    assert called.returncode == 0, called.stderr
    assert "Duration: 4 seconds" in called.stdout
    assert time.monotonic() - started >= 4  # far longer than 1.5 s, kept alive by its progress
    assert fixture_children() == []


@needs_everything
def test_timeout_option_bounds_a_silent_call_and_names_itself(tmp_path):
    env = configure(tmp_path, {"everything": EVERY})
    started = time.monotonic()
    called = hostlink_here(env, tmp_path, "mcp", "call", "everything", LONG, '{"duration": 3, "steps": 1}',
                      "--timeout", "1")
    assert called.returncode == 3, called.stderr
    assert called.stderr.strip() == (
        f"MCP server 'everything' did not answer the call of tool '{LONG}' within 1 s (the timeout this call was "
        "given; each progress notification restarts the wait); wait longer with --timeout SECONDS or a larger "
        "toolTimeoutMs (the call), or a larger requestTimeoutMs (the setup)")
    assert time.monotonic() - started < 30
    as_json = hostlink_here(env, tmp_path, "mcp", "call", "everything", LONG, '{"duration": 3, "steps": 1}',
                       "--timeout", "1", "--json")
    assert as_json.returncode == 3 and json.loads(as_json.stdout)["error"]["code"] == "timeout"
    bad = hostlink_here(env, tmp_path, "mcp", "call", "everything", LONG, "{}", "--timeout", "0")
    assert bad.returncode == 2 and "--timeout" in bad.stderr


@needs_everything
def test_without_the_option_toolTimeoutMs_bounds_a_silent_call_and_not_the_setup(tmp_path):
    env = configure(tmp_path, {"everything": {**EVERY, "toolTimeoutMs": 2000}})  # the setup keeps its 15 s
    called = hostlink_here(env, tmp_path, "mcp", "call", "everything", LONG, '{"duration": 5, "steps": 1}')
    assert called.returncode == 3, called.stderr
    assert f"did not answer the call of tool '{LONG}' within 2000 ms (its toolTimeoutMs;" in called.stderr
    assert "--timeout SECONDS" in called.stderr


@needs_everything
@pytest.mark.anyio
async def test_progress_never_outlasts_the_hard_maximum():
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from hostlink.mcp.errors import RequestTimedOut
    from hostlink.mcp.runtime.progress import call_with_progress

    server = StdioServerParameters(command=EVERY["command"], args=EVERY["args"])
    # the server's stderr to this test's: stdio_client's default is the sys.stderr of its first import, which
    # an earlier in-process CLI test (click's runner) may have replaced
    async with Client(stdio_client(server, errlog=sys.stderr), mode="auto") as client:
        started = anyio.current_time()
        with pytest.raises(RequestTimedOut, match=r"kept reporting progress but did not finish .* within 2 s"):
            await call_with_progress(client, "everything", LONG, {"duration": 6, "steps": 12}, 1000, max_seconds=2)
        assert 1.9 <= anyio.current_time() - started < 8
        seen: list[tuple[float, float | None]] = []
        with watching(CallWatch(lambda progress, total, message: seen.append((progress, total)))):
            done = await call_with_progress(client, "everything", LONG, {"duration": 1, "steps": 2}, 1000)
        assert not done.is_error and seen == [(1.0, 2.0), (2.0, 2.0)]
