"""The child's argv and environment, the process group, and the proposal-only MCP server."""

from __future__ import annotations

import io
import json
import os
import runpy
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from claude_transport_support import live_processes_mentioning
from hostlink.claude_code import process, proposal_server
from hostlink.claude_code.process import (
    PROPOSAL_SERVER,
    ClaudeProcess,
    ClaudeTransportOptions,
    build_argv,
    child_environment,
    mcp_config,
)

# --- argv and environment -------------------------------------------------------------


def test_argv_is_the_reference_request():
    argv = build_argv("claude", model="opus", system_prompt_file=Path("/p/system-prompt.txt"),
                      mcp_config_file=Path("/p/mcp.json"), effort="high")  # fmt: skip
    assert argv[:2] == ["claude", "-p"]
    pairs = {argv[i]: argv[i + 1] for i in range(len(argv) - 1) if argv[i].startswith("--")}
    assert pairs["--setting-sources"] == ""
    assert pairs["--permission-mode"] == "dontAsk"
    assert pairs["--mcp-config"] == "/p/mcp.json"
    assert pairs["--tools"] == ""
    assert pairs["--model"] == "opus" and pairs["--effort"] == "high"
    assert pairs["--input-format"] == pairs["--output-format"] == "stream-json"
    assert pairs["--system-prompt-file"] == "/p/system-prompt.txt"
    assert pairs["--max-turns"] == "1"
    settings = json.loads(pairs["--settings"])
    assert settings["disableAllHooks"] is True
    assert set(settings["enabledPlugins"].values()) == {False}
    for flag in ("--disable-slash-commands", "--strict-mcp-config", "--no-session-persistence",
                 "--include-partial-messages", "--verbose"):  # fmt: skip
        assert flag in argv
    assert "--bare" not in argv and "--safe-mode" not in argv
    # Every variadic flag is followed by its value and then another flag: nothing to swallow.
    for flag in ("--tools", "--mcp-config"):
        assert argv[argv.index(flag) + 2].startswith("--")


def test_argv_without_effort_and_with_search_tools():
    argv = build_argv("claude", model="haiku", system_prompt_file=Path("/p/s"), mcp_config_file=None,
                      tools=("WebSearch", "WebFetch"), allowed_tools=("WebSearch", "WebFetch"))  # fmt: skip
    assert "--effort" not in argv and "--mcp-config" not in argv
    assert argv[argv.index("--tools") + 1] == "WebSearch,WebFetch"
    assert argv[argv.index("--allowedTools") + 2].startswith("--")
    with pytest.raises(ValueError, match="effort must be one of low, medium, high, xhigh, max"):
        build_argv("claude", model="x", system_prompt_file=Path("/p/s"), mcp_config_file=None, effort="ultra")


def test_mcp_config_holds_only_the_proposal_server():
    config = json.loads(mcp_config(Path("/p/catalog.json"), Path("/p/violation.json"), "hostlink"))
    assert list(config["mcpServers"]) == ["hostlink"]
    server = config["mcpServers"]["hostlink"]
    assert server["command"] == sys.executable
    assert server["args"] == ["-I", "-S", str(PROPOSAL_SERVER), "/p/catalog.json", "/p/violation.json"]
    assert server["env"] == {}


def test_environment_is_allowlisted():
    parent = {name: f"v-{name}" for name in process.ENV_ALLOWLIST}
    parent.update({
        "ANTHROPIC_API_KEY": "sk", "ANTHROPIC_AUTH_TOKEN": "t", "ANTHROPIC_BASE_URL": "http://x",
        "CLAUDE_CODE_USE_BEDROCK": "1", "CLAUDE_CODE_USE_VERTEX": "1", "CLAUDE_CODE_OAUTH_TOKEN": "o",
        "AWS_SECRET_ACCESS_KEY": "a", "LD_PRELOAD": "/evil.so", "NODE_OPTIONS": "--require /evil.js",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "0",
    })  # fmt: skip
    env = child_environment(parent, ClaudeTransportOptions())
    assert set(env) == set(process.ENV_ALLOWLIST) | set(process.FIXED_ENV)
    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert env["HOME"] == "v-HOME" and env["TMPDIR"] == "v-TMPDIR"
    assert child_environment(parent, ClaudeTransportOptions(), temp_dir=Path("/p/tmp"))["TMPDIR"] == "/p/tmp"


def test_on_windows_the_child_keeps_what_windows_needs_and_its_temp_and_caches_are_private(monkeypatch):
    """Without SystemRoot a Windows program may not start; without TEMP and LOCALAPPDATA of its
    own, claude.exe leaves session folders in the system's temp folder and MCP logs in the
    user's (the Windows lane saw both)."""
    monkeypatch.setattr(sys, "platform", "win32")
    parent = {"HOME": "/h", "SystemRoot": r"C:\Windows", "ComSpec": r"C:\Windows\System32\cmd.exe",
              "USERPROFILE": r"C:\Users\u", "APPDATA": r"C:\Users\u\AppData\Roaming", "TEMP": r"C:\T",
              "LOCALAPPDATA": r"C:\Users\u\AppData\Local", "PSModulePath": "x", "ANTHROPIC_API_KEY": "sk"}
    env = child_environment(parent, ClaudeTransportOptions())
    assert {"SystemRoot", "ComSpec", "USERPROFILE", "APPDATA", "TEMP", "LOCALAPPDATA"} <= set(env)
    assert "PSModulePath" not in env and "ANTHROPIC_API_KEY" not in env
    private = child_environment(parent, ClaudeTransportOptions(), temp_dir=Path("/p/tmp"))
    assert {private[name] for name in ("TMPDIR", "TEMP", "TMP", "LOCALAPPDATA")} == {str(Path("/p/tmp"))}
    assert private["APPDATA"] == parent["APPDATA"]  # settings stay the user's


def test_the_output_cap_comes_from_the_request_never_from_the_parent():
    parent = {"HOME": "/h", "CLAUDE_CODE_MAX_OUTPUT_TOKENS": "9", "MAX_THINKING_TOKENS": "9"}
    assert "CLAUDE_CODE_MAX_OUTPUT_TOKENS" not in child_environment(parent, ClaudeTransportOptions())
    env = child_environment(parent, ClaudeTransportOptions(), max_output_tokens=77)
    assert env["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] == "77" and "MAX_THINKING_TOKENS" not in env
    for bad in (0, -1, True, "77"):
        with pytest.raises(ValueError, match="max_output_tokens must be a positive integer"):
            child_environment(parent, ClaudeTransportOptions(), max_output_tokens=bad)  # type: ignore[arg-type]


def test_test_option_routes_to_loopback_only():
    options = ClaudeTransportOptions(test_api_base_url="http://127.0.0.1:8123", test_api_key="sk-test")
    env = child_environment({"HOME": "/h", "ANTHROPIC_API_KEY": "sk-parent"}, options)
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:8123"
    assert env["ANTHROPIC_API_KEY"] == "sk-test"  # the option's key, never the parent's
    assert env["CLAUDE_CODE_MAX_RETRIES"] == "0"
    for url in ("https://api.anthropic.com", "http://10.0.0.1:80", "http://localhost.evil.com", "ftp://127.0.0.1"):
        with pytest.raises(ValueError, match="test_api_base_url must be an http:// loopback address"):
            ClaudeTransportOptions(test_api_base_url=url, test_api_key="k")
    with pytest.raises(ValueError,
                       match="test_api_base_url goes with exactly one of test_api_key and test_oauth_token"):
        ClaudeTransportOptions(test_api_base_url="http://127.0.0.1:1")


# --- the process group ----------------------------------------------------------------

_GROUP_SCRIPT = """
import signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN if sys.argv[1] == "stubborn" else lambda *a: sys.exit(143))
code = ("import os,signal,time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print(os.getpid(), flush=True); time.sleep(600)")
subprocess.Popen([sys.executable, "-c", code, sys.argv[2]])  # reports its pid once it ignores SIGTERM
time.sleep(600)
"""


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["polite", "stubborn"])
async def test_terminate_stops_the_whole_owned_group(tmp_path, mode):
    tag = f"group-test-{tmp_path.name}"
    script = tmp_path / "group.py"
    script.write_text(_GROUP_SCRIPT)
    child = await ClaudeProcess.start([sys.executable, str(script), mode, tag], dict(os.environ), tmp_path,
                                      tmp_path / "stderr.log")  # fmt: skip
    grandchild = int(await child.receive_line())
    assert os.getpgid(grandchild) == child.pid != os.getpgid(0)
    returncode = await child.terminate()
    assert returncode == (143 if mode == "polite" else -9)
    assert child.escalated  # the grandchild ignores SIGTERM either way
    assert live_processes_mentioning(tag) == []
    assert stat.S_IMODE(os.stat(tmp_path / "stderr.log").st_mode) == 0o600


_LEAVES_A_STUBBORN_CHILD = """
import subprocess, sys
code = ("import os,signal,time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print(os.getpid(), flush=True); time.sleep(600)")
subprocess.Popen([sys.executable, "-c", code, sys.argv[1]])
"""


@pytest.mark.anyio
async def test_a_child_that_exits_on_its_own_takes_its_stubborn_group_with_it(tmp_path):
    tag = f"left-behind-{tmp_path.name}"
    script = tmp_path / "leaves.py"
    script.write_text(_LEAVES_A_STUBBORN_CHILD)
    child = await ClaudeProcess.start([sys.executable, str(script), tag], dict(os.environ), tmp_path,
                                      tmp_path / "stderr.log")  # fmt: skip
    assert int(await child.receive_line()) > 0  # the grandchild ignores SIGTERM from here on
    assert await child.wait() == 0
    assert child.escalated  # still there after the grace: killed
    assert live_processes_mentioning(tag) == []
    await child.terminate()


@pytest.mark.anyio
async def test_the_stderr_tail_is_the_last_whole_lines_with_private_paths_hidden(tmp_path):
    private = str(tmp_path / "private")
    code = ("import sys; sys.stderr.write('cut' * 2000 + '\\n' + 'x' * 300 + '\\n' + "
            f"'reading {private}/a\\n\\nlast in ' + {str(tmp_path)!r} + '\\n')")
    child = await ClaudeProcess.start([sys.executable, "-c", code], dict(os.environ), tmp_path,
                                      tmp_path / "stderr.log")  # fmt: skip
    assert await child.wait() == 0
    tail = child.stderr_tail({"": "never", private: "<private>", str(tmp_path): "~"})
    assert tail == ["x" * 199 + "\u2026", "reading <private>/a", "last in ~"]
    await child.terminate()
    (tmp_path / "stderr.log").unlink()
    assert child.stderr_tail({}) == []  # nothing to read: nothing to show


@pytest.mark.anyio
@pytest.mark.parametrize("code", ["print('x' * 5000)",  # a whole line, too long
                                  "import sys; sys.stdout.write('x' * 5000)"])  # no end of line within the bound
async def test_overlong_line_is_refused(tmp_path, monkeypatch, code):
    monkeypatch.setattr(process, "MAX_LINE_BYTES", 1000)
    child = await ClaudeProcess.start([sys.executable, "-c", code], dict(os.environ), tmp_path,
                                      tmp_path / "stderr.log")  # fmt: skip
    with pytest.raises(process.ProcessError, match="longer than"):
        await child.receive_line()
    await child.terminate()


# --- the proposal server --------------------------------------------------------------

CATALOG = {"tools": [{"name": "echo", "description": "Echo", "inputSchema": {"type": "object"}}]}


@pytest.fixture
def catalog_file(tmp_path):
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps(CATALOG))
    return catalog


@pytest.fixture
def server(catalog_file, tmp_path):
    """The proposal server's loop in this process, on real pipes: the protocol without a start-up."""
    marker = tmp_path / "violation.json"
    to_server_read, to_server_write = os.pipe()
    from_server_read, from_server_write = os.pipe()
    stdin, stdout = os.fdopen(to_server_read, "rb"), os.fdopen(from_server_write, "wb")
    writer, reader = os.fdopen(to_server_write, "wb"), os.fdopen(from_server_read, "rb")
    loop = threading.Thread(target=proposal_server.serve, args=(str(catalog_file), str(marker), stdin, stdout))
    loop.start()

    def ask(message):
        send(json.dumps(message).encode() + b"\n")
        return None if "id" not in message else json.loads(reader.readline())

    def send(raw):
        writer.write(raw)
        writer.flush()

    ask.marker, ask.send, ask.reader, ask.loop = marker, send, reader, loop
    yield ask
    writer.close()
    loop.join(timeout=10)
    assert not loop.is_alive()
    for pipe in (stdin, stdout, reader):
        pipe.close()


def test_proposal_server_lists_and_never_runs(server):
    init = server({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                   "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "t", "version": "1"}}})  # fmt: skip
    assert init["result"]["protocolVersion"] == "2025-06-18"
    assert init["result"]["capabilities"] == {"tools": {"listChanged": False}}
    assert server({"jsonrpc": "2.0", "method": "notifications/initialized"}) is None
    assert server({"jsonrpc": "2.0", "id": 2, "method": "ping"}) == {"jsonrpc": "2.0", "id": 2, "result": {}}
    assert server({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})["result"] == CATALOG
    missing = server({"jsonrpc": "2.0", "id": 4, "method": "resources/list"})
    assert missing["error"]["code"] == -32601
    assert not server.marker.exists()
    call = server({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "echo", "arguments": {}}})
    assert "error" in call and "result" not in call
    assert stat.S_IMODE(os.stat(server.marker).st_mode) == 0o600
    assert json.loads(server.marker.read_text())["tool"] == "echo"
    again = server({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "other"}})
    assert "error" in again  # the first marker stays; still an error
    assert json.loads(server.marker.read_text())["tool"] == "echo"


def test_proposal_server_unknown_protocol_version_gets_its_newest(server):
    init = server({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "1999-01-01"}})
    assert init["result"]["protocolVersion"] == "2025-11-25"


def test_proposal_server_marks_a_call_sent_as_notification(server):
    assert server({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "echo"}}) is None
    assert server({"jsonrpc": "2.0", "id": 9, "method": "ping"})["result"] == {}
    assert server.marker.exists()


def test_proposal_server_answers_a_broken_line_and_ignores_junk(server):
    server.send(b"{not json\n")
    assert json.loads(server.reader.readline()) == {"jsonrpc": "2.0", "id": None,
                                                    "error": {"code": -32700, "message": "parse error"}}  # fmt: skip
    server.send(b'[1, 2]\n{"jsonrpc": "2.0", "id": 7, "result": {}}\n')  # not a request: nothing to answer
    init = server({"jsonrpc": "2.0", "id": 8, "method": "initialize", "params": "not an object"})
    assert init["result"]["protocolVersion"] == "2025-11-25"  # the junk got no reply: the next line is this one
    assert not server.marker.exists()


def test_proposal_server_goes_away_on_an_unbounded_line(server):
    server.send(b"x" * (proposal_server.MAX_LINE_BYTES + 2) + b"\n")
    server.loop.join(timeout=30)
    assert not server.loop.is_alive()  # it stopped reading rather than buffer the line


def test_proposal_server_refuses_a_catalog_without_tools(tmp_path):
    for document in ('{"not_tools": []}', "[]"):
        catalog = tmp_path / "c.json"
        catalog.write_text(document)
        with pytest.raises(ValueError, match="catalog has no tools list"):
            proposal_server.serve(str(catalog), str(tmp_path / "m"))
    assert not (tmp_path / "m").exists()


def test_proposal_server_usage_and_a_quiet_end_of_input(monkeypatch, capsys, catalog_file, tmp_path):
    monkeypatch.setattr(sys, "argv", ["proposal_server.py"])
    with pytest.raises(SystemExit) as exited:
        runpy.run_path(str(PROPOSAL_SERVER), run_name="__main__")
    assert exited.value.code == 2
    assert capsys.readouterr().err == "usage: proposal_server.py CATALOG MARKER\n"
    monkeypatch.setattr(sys, "argv", ["proposal_server.py", str(catalog_file), str(tmp_path / "m")])
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    runpy.run_path(str(PROPOSAL_SERVER), run_name="__main__")  # the client closed its end: a plain return
    assert capsys.readouterr() == ("", "")


def test_proposal_server_leaves_quietly_with_130_when_interrupted(monkeypatch, capsys, catalog_file, tmp_path):
    """The SIGINT Claude stops it with, in process (the real child below runs without site, so
    unmeasured): no traceback, status 130."""

    class Interrupted(io.BytesIO):
        def readline(self, size=-1):
            raise KeyboardInterrupt

    monkeypatch.setattr(sys, "argv", ["proposal_server.py", str(catalog_file), str(tmp_path / "m")])
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(Interrupted()))
    with pytest.raises(SystemExit) as exited:
        runpy.run_path(str(PROPOSAL_SERVER), run_name="__main__")
    assert exited.value.code == 130 and capsys.readouterr() == ("", "")


@pytest.mark.skipif(sys.platform == "win32", reason="Claude stops its MCP servers with SIGINT on POSIX")
def test_proposal_server_as_claude_starts_and_stops_it(catalog_file, tmp_path):
    """The real `python -I -S` child: it answers, marks a call, and leaves with 130 on SIGINT."""
    marker = tmp_path / "violation.json"
    proc = subprocess.Popen([sys.executable, "-I", "-S", str(PROPOSAL_SERVER), str(catalog_file), str(marker)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    try:
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo"}}
        proc.stdin.write(b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}\n' + json.dumps(call).encode() + b"\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["result"] == CATALOG
        assert json.loads(proc.stdout.readline())["error"]["code"] == -32603
        assert json.loads(marker.read_text()) == {"violation": "tools/call", "tool": "echo"}
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 130
        assert proc.stderr.read() == b""  # no traceback
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            pipe.close()


def test_proposal_server_imports_only_the_standard_library(tmp_path):
    catalog = tmp_path / "c.json"
    catalog.write_text(json.dumps(CATALOG))
    code = (
        "import runpy, sys; sys.argv = ['ps', sys.argv[1], sys.argv[2]]; "
        f"sys.stdin = open('/dev/null'); runpy.run_path(sys.argv[0] if False else {str(PROPOSAL_SERVER)!r}, "
        "run_name='__main__'); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'hostlink', 'pydantic', 'anyio')))"
    )
    out = subprocess.run([sys.executable, "-I", "-S", "-c", code, str(catalog), str(tmp_path / "m")],
                         capture_output=True, text=True, timeout=30)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_proposal_server_refuses_a_broken_catalog(tmp_path):
    catalog = tmp_path / "c.json"
    catalog.write_text('{"not_tools": []}')
    out = subprocess.run([sys.executable, "-I", "-S", str(PROPOSAL_SERVER), str(catalog), str(tmp_path / "m")],
                         input=b"", capture_output=True, timeout=30)  # fmt: skip
    assert out.returncode != 0 and out.stdout == b""
