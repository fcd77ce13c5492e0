"""Hostile stdio servers: orphaned grandchildren, error codes that look like transport state,
invalid UTF-8, very long lines, secrets in the command.

Before (the adversarial battery): a grandchild holding stdout, or one in its own session,
outlived `hostlink mcp call`; a tool's JSON-RPC error -32000 latched the connection as
closed and -32001 read as a timeout; one invalid UTF-8 byte left a dead session that said
"connected"; a 50 MiB line took past the 15 s timeout (quadratic reads); `"command":
"${SECRET}"` printed the secret, and a missing `cwd` read as "command not found".
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from adversarial.support import assert_contained, run_cli, stdio, untouched_url


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("attack", ["grandchild", "setsid-grandchild"])
def test_no_grandchild_outlives_the_command(tmp_path, attack):
    pidfile = tmp_path / "grandchild.pid"
    run = run_cli(tmp_path, {"kids": stdio(attack, str(pidfile))}, "mcp", "call", "kids", "ok")
    assert (run.code, run.out) == (0, "still here\n"), run.err
    grandchild = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild), f"{attack} {grandchild} outlived hostlink mcp call"
    assert_contained(run)


@pytest.mark.parametrize("code", ["-32000", "-32001"])
def test_a_tools_error_code_is_the_tools_answer_not_transport_state(tmp_path, code):
    run = run_cli(tmp_path, {"err": stdio("tool-error", code)}, "mcp", "call", "err", "boom")
    assert run.code == 3  # the server refused the request (not the tool's own isError)
    assert "tool refused" in run.err and "closed the connection" not in run.err and "did not answer" not in run.err
    assert_contained(run)


@pytest.mark.anyio
@pytest.mark.parametrize("code", [-32000, -32001])
async def test_after_a_tool_error_code_the_session_stays_connected(code):
    from hostlink.mcp.config.schema import parse_server
    from hostlink.mcp.errors import CallFailed
    from hostlink.mcp.runtime.clients import McpRuntime

    runtime = McpRuntime({"err": parse_server(stdio("tool-error", str(code)))})
    try:
        with pytest.raises(CallFailed, match="tool refused"):
            await runtime.call_tool("err", "boom", {})
        assert runtime.snapshot("err").state == "connected"
        assert (await runtime.call_tool("err", "ok", {})).content[0].text == "still here"
    finally:
        await runtime.aclose()


@pytest.mark.anyio
@pytest.mark.parametrize(("attack", "said"), [
    ("bad-result", "sent an invalid result for the call of tool 'boom'"),
    ("schema-mismatch", "sent a result for the call of tool 'boom' that does not match the tool's output schema"),
])
async def test_a_result_that_is_not_a_valid_tool_result_is_named_and_the_session_lives(attack, said):
    from hostlink.mcp.config.schema import parse_server
    from hostlink.mcp.errors import CallFailed
    from hostlink.mcp.runtime.clients import McpRuntime

    runtime = McpRuntime({"odd": parse_server(stdio(attack))})
    try:
        await runtime.list_tools("odd")  # the output schemas are known before the call, as the mcp tool does
        with pytest.raises(CallFailed) as failed:
            await runtime.call_tool("odd", "boom", {})
        assert str(failed.value) == f"MCP server 'odd' {said}"
        assert runtime.snapshot("odd").state == "connected"
    finally:
        await runtime.aclose()


@pytest.mark.anyio
async def test_a_notification_of_too_many_items_ends_the_connection_naming_why():
    """A message that answers no request cannot be refused to its sender: the connection ends."""
    from hostlink.mcp.config.schema import parse_server
    from hostlink.mcp.errors import ConnectFailed
    from hostlink.mcp.runtime.clients import McpRuntime

    runtime = McpRuntime({"flood": parse_server(stdio("typed-flood"))})
    try:
        with pytest.raises(ConnectFailed) as lost:
            await runtime.call_tool("flood", "boom", {})
        assert str(lost.value).startswith(
            "MCP server 'flood': the server sent a message of more than 100,000 items; it was not read")
        assert runtime.snapshot("flood").state == "failed"
    finally:
        await runtime.aclose()


@pytest.mark.anyio
async def test_invalid_utf8_is_replaced_and_the_connection_lives():
    from hostlink.mcp.config.schema import parse_server
    from hostlink.mcp.runtime.clients import McpRuntime

    runtime = McpRuntime({"utf": parse_server(stdio("bad-utf8", requestTimeoutMs=5000))})
    try:
        result = await runtime.call_tool("utf", "bad", {})
        assert result.content[0].text == "before-\ufffd-after"
        assert (await runtime.call_tool("utf", "ok", {})).content[0].text == "still here"
        assert runtime.snapshot("utf").state == "connected"
    finally:
        await runtime.aclose()


def test_a_50_mib_line_arrives_within_the_timeout_and_memory_stays_bounded(tmp_path):
    run = run_cli(tmp_path, {"big": stdio("big-line", "50")}, "mcp", "call", "big", "boom")
    assert run.code == 0, run.err
    assert run.out.rstrip().endswith("full output not kept]")
    assert_contained(run)


def test_a_line_over_64_mib_closes_the_connection_with_a_reason(tmp_path):
    run = run_cli(tmp_path, {"huge": stdio("big-line", "70")}, "mcp", "call", "huge", "boom")
    assert run.code == 3
    assert "sent a message over 64 MiB" in run.err
    assert_contained(run)


def test_a_secret_command_is_never_echoed_and_a_missing_cwd_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("SECRET_COMMAND", "SUPERSECRET-42")
    run = run_cli(tmp_path, {"s": {"command": "${SECRET_COMMAND}"}}, "mcp", "connect", "s")
    assert run.code == 3 and "SUPERSECRET-42" not in run.err and "${SECRET_COMMAND}" in run.err, run.err
    missing = run_cli(tmp_path, {"c": {"command": sys.executable, "cwd": str(tmp_path / "nowhere")}},
                      "mcp", "connect", "c")
    assert missing.code == 3 and 'working directory ("cwd") does not exist' in missing.err, missing.err
    assert "command not found" not in missing.err
    assert_contained(run)


def test_a_flood_of_notifications_is_absorbed_in_bounded_memory(tmp_path):
    # What is checked is that the flood is contained: no output, and memory no higher than the
    # same call's without it (keeping these 20,000 messages would add ~12 MiB, measured by
    # keeping their params), not how fast it is read; the call gets a bound far past the reading
    # (toolTimeoutMs; the flood comes before the call's answer).
    quiet = run_cli(tmp_path, {"loud": stdio("notification-flood", "0")}, "mcp", "call", "loud", "boom")
    assert (quiet.code, quiet.out) == (0, "done\n"), quiet.err
    loud = stdio("notification-flood", "20000", toolTimeoutMs=300000)
    run = run_cli(tmp_path, {"loud": loud}, "mcp", "call", "loud", "boom")
    assert (run.code, run.out) == (0, "done\n"), run.err
    assert_contained(run, max_bytes=2048)
    grown = run.peak_mib - quiet.peak_mib
    assert grown < 6, f"peak RSS {run.peak_mib:.0f} MiB, {grown:.1f} MiB more than without the flood"


def test_requests_from_the_server_that_were_never_advertised_are_refused(tmp_path):
    run = run_cli(tmp_path, {"asks": stdio("server-request")}, "mcp", "call", "asks", "boom")
    assert (run.code, run.out) == (0, "refused: True\n"), run.err
    assert_contained(run, max_bytes=2048)


def test_a_schema_that_refers_elsewhere_is_never_fetched(tmp_path):
    """A tool schema's $ref to a URL: both validators fetch such references by default."""
    with untouched_url() as url:
        run = run_cli(tmp_path, {"refs": stdio("remote-ref", url)}, "mcp", "call", "refs", "boom", '{"a": 1}')
        assert run.code != 0 and "has an invalid input schema; not calling it" in run.err, run.err
        assert_contained(run, max_bytes=2048)


def test_a_million_items_are_refused_before_they_become_objects(tmp_path):
    run = run_cli(tmp_path, {"items": stdio("many-items", "1000000")}, "mcp", "call", "items", "boom")
    assert run.code == 3  # a server problem
    assert "sent a message of more than 100,000 items; it was not read" in run.err, run.err
    assert_contained(run)


# --- issue 15 #2: a failing server's own words, for a person; never the SDK's internals --------


def test_a_failing_server_s_stderr_follows_the_one_line_reason(tmp_path):
    run = run_cli(tmp_path, {"fatal": stdio("fatal")}, "mcp", "tools", "fatal")
    assert run.code == 3
    lines = run.err.splitlines()
    assert lines[0].startswith("hostlink mcp: MCP server 'fatal' ") and "exited" in lines[0]
    assert lines[1:] == ["the server said:", "  loading config red", "  FATAL: missing API_KEY"]
    assert_contained(run)

    called = run_cli(tmp_path, {"fatal": stdio("fatal")}, "mcp", "call", "fatal", "ok")
    assert called.code == 3 and "  FATAL: missing API_KEY" in called.err.splitlines()
    assert_contained(called)


def test_the_tail_is_the_last_20_lines_and_verbose_shows_all_of_it(tmp_path):
    run = run_cli(tmp_path, {"flood": stdio("stderr-flood", "100")}, "mcp", "tools", "flood")
    lines = run.err.splitlines()
    assert lines[1] == "the server said (last 20 of 100 lines; --verbose for all):"
    assert lines[2:] == [f"  line {index}" for index in range(80, 100)]
    assert_contained(run)
    verbose = run_cli(tmp_path, {"flood": stdio("stderr-flood", "100")}, "mcp", "tools", "flood", "--verbose")
    assert verbose.err.splitlines()[1:] == ["the server said:", *(f"  line {index}" for index in range(100))]
    huge = run_cli(tmp_path, {"flood": stdio("stderr-flood", "100000")}, "mcp", "--verbose", "tools", "flood")
    assert 6000 < len(huge.stderr) < 11000  # the whole bounded tail: 8 KiB, each line indented
    assert huge.err.splitlines()[-1] == "  line 99999"
    assert_contained(huge)


def test_a_server_that_breaks_the_protocol_gets_one_line_naming_what_it_sent(tmp_path):
    run = run_cli(tmp_path, {"noisy": stdio("noise")}, "mcp", "connect", "noisy")
    lines = run.err.splitlines()
    assert run.code == 3
    assert "broke the protocol: it wrote 100 lines to stdout that are not JSON-RPC" in lines[0]
    assert lines[1:3] == ["the server said:", "  stdout (not JSON-RPC): Usage: server [stdio|http]"]
    assert "pydantic" not in run.err and "validation error" not in run.err.lower()
    assert len(lines) == 3
    assert_contained(run)


@pytest.mark.anyio
async def test_after_a_refused_message_the_connection_keeps_serving():
    from hostlink.mcp.config.schema import parse_server
    from hostlink.mcp.errors import CallFailed
    from hostlink.mcp.runtime.clients import McpRuntime

    runtime = McpRuntime({"items": parse_server(stdio("many-items", "200000"))})
    try:
        with pytest.raises(CallFailed, match="more than 100,000 items"):
            await runtime.call_tool("items", "boom", {})
        assert (await runtime.call_tool("items", "ok", {})).content[0].text == "still here"
        assert runtime.snapshot("items").state == "connected"
    finally:
        await runtime.aclose()


@pytest.mark.anyio
async def test_the_model_gets_the_classified_reason_without_the_server_s_words(tmp_path, monkeypatch):
    from hostlink.host import CancelSignal, CommandFailed
    from hostlink.mcp.config.schema import parse_server
    from hostlink.mcp.extension import McpExtension
    from mcp_runtime_support import Host, text

    monkeypatch.setenv("HOSTLINK_RUNTIME_DIR", str(tmp_path / "rt"))
    servers = {"fatal": parse_server(stdio("fatal")), "noisy": parse_server(stdio("noise"))}
    async with Host(McpExtension(servers=servers), tmp_path) as host:
        for name in servers:
            result = await host.run(action="tools", server=name)
            assert result.is_error
            assert "API_KEY" not in text(result) and "Usage" not in text(result) and "said" not in text(result)
        with pytest.raises(CommandFailed) as failed:
            await host.session.run_command("mcp", ["tools", "fatal"], CancelSignal())
        assert "  FATAL: missing API_KEY" in str(failed.value).splitlines()  # the /mcp command is for a person
