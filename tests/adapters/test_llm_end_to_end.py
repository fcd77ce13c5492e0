"""Acceptance: the real `llm` CLI, the real `claude` CLI (against the fake Anthropic API) and
the demo MCP server, in one run.

Claude proposes a call of the `mcp` tool; llm runs it (its own non-interactive tool loop)
against the demo server; the result reaches the second API request; the final text prints;
and afterwards no claude child, MCP server or private file is left.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from claude_transport_support import records
from hostlink.claude_code import metrics
from llm_support import LlmDirs, leftover_files, leftover_processes, run_llm
from process_support import started

FAKES = Path(__file__).parents[1] / "fakes"
sys.path.insert(0, str(FAKES))
import fake_anthropic as fa  # noqa: E402

from peers import CLAUDE_BIN, requires_claude  # noqa: E402

BIN = CLAUDE_BIN
HOST = [sys.executable, str(Path(__file__).parents[1] / "llm_e2e_host.py")]
SECRET_WORD = "xyzzy-4711"  # appears only in the proposed call and in the server's answer
CALL = {"action": "call", "server": "demo", "tool": "echo", "args": {"text": SECRET_WORD}}

pytestmark = [pytest.mark.slow, requires_claude]


@pytest.fixture
def dirs(tmp_path: Path) -> LlmDirs:
    return LlmDirs(tmp_path).create()


def llm(dirs: LlmDirs, api: fa.FakeAnthropic, *args: str):
    path = f"{BIN}:{Path(sys.executable).parent}:/usr/bin:/bin"
    return run_llm(dirs, api.base_url, *args, path=path, command=HOST, timeout=180)


def assert_nothing_left(dirs: LlmDirs) -> None:
    assert leftover_processes(str(dirs.root)) == []
    # The doctor's last-request metrics file is kept on purpose (bounded facts only, 0600).
    assert leftover_files(dirs.runtime) in ([], [metrics.FILE_NAME])


def test_claude_proposes_llm_runs_mcp_and_the_result_reaches_claude(dirs, api):
    api.push(
        fa.Reply((fa.Text("Let me ask the demo server."), fa.ToolUse("mcp__hostlink__mcp", CALL, id="toolu_e2e_1")),
                 stop_reason="tool_use"),
        fa.text(f"The demo server echoed {SECRET_WORD}."),
    )
    result = llm(dirs, api, "-m", "claude-code/sonnet", "-T", "mcp", "--td", "-u", "Echo the magic word via MCP.")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"Let me ask the demo server. The demo server echoed {SECRET_WORD}."
    assert result.stderr.count("Tool call: mcp(") == 1 and "Traceback" not in result.stderr
    # The fake API's usage (11 in, 7 out) for each of the two requests; no cost is claimed.
    assert result.stderr.count("Token usage: 11 input, 7 output") == 2

    first, second = api.messages_requests()
    assert SECRET_WORD not in json.dumps(records(first))
    results = [r for r in records(second) if SECRET_WORD in json.dumps(r) and r.get("type") == "toolResult"]
    assert results, records(second)
    assert_nothing_left(dirs)

    # -c: the logged conversation (prompt, proposal, tool result, answer) becomes the next
    # request's transcript.
    api.push(fa.text("Still the same word."))
    again = llm(dirs, api, "-c", "What was the word?")
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "Still the same word."
    third = api.messages_requests()[2]
    history = json.dumps(records(third))
    assert "Echo the magic word via MCP." in history and SECRET_WORD in history
    assert "What was the word?" in history
    assert_nothing_left(dirs)


def test_api_failure_is_an_llm_error_not_reply_text(dirs, api):
    api.push(fa.usage_limit())
    result = llm(dirs, api, "-m", "claude-code/haiku", "hello")
    assert result.returncode == 1
    assert result.stdout.strip() == ""
    assert result.stderr.startswith("Error: ") and "Traceback" not in result.stderr
    assert_nothing_left(dirs)


class _StalledApi:
    """An API that accepts a request and never answers it, until the test ends."""

    def __init__(self) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.requested = threading.Event()
        self.release = threading.Event()
        stalled = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                stalled.requested.set()
                stalled.release.wait()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> _StalledApi:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()


def test_ctrl_c_during_a_request_stops_claude_and_cleans_up(dirs):
    path = f"{BIN}:{Path(sys.executable).parent}:/usr/bin:/bin"
    with _StalledApi() as api, started([*HOST, api.base_url, "-m", "claude-code/sonnet", "-T", "mcp", "hello"],
                 cwd=dirs.project, env=dirs.env(path), stdin=subprocess.DEVNULL,
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as child:
        assert api.requested.wait(120), "claude never reached the API"
        assert any("claude" in line for line in leftover_processes(str(dirs.root)))
        child.send_signal(signal.SIGINT)
        stdout, stderr = child.communicate(timeout=120)
    assert child.returncode != 0
    assert stdout == "" and "Traceback" not in stderr
    assert_nothing_left(dirs)
