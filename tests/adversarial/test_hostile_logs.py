"""What the MCP SDK logs about a hostile server reaches stderr as a few bounded lines.

Before: 100,000 malformed stdout lines put 87 MB of tracebacks (each quoting the server's
text) on stderr; a redirect's 60 KB `Location` was logged verbatim.
"""

from __future__ import annotations

from adversarial.support import assert_contained, run_cli, stdio


def test_a_flood_of_malformed_lines_is_one_line_on_stderr(tmp_path):
    run = run_cli(tmp_path, {"flood": stdio("log-flood", "100000")}, "mcp", "call", "flood", "boom")
    assert run.code == 0 and run.out == "done\n", run.err
    assert len(run.err.splitlines()) <= 3 and "not json" not in run.err
    assert_contained(run, max_bytes=2048)


def test_a_huge_redirect_location_is_not_logged_verbatim(tmp_path, hostile):
    servers = {"moved": {"url": f"{hostile}/redirect/mcp", "protocolVersion": "legacy"}}
    run = run_cli(tmp_path, servers, "mcp", "connect", "moved")
    assert run.code == 3
    assert "moved" in run.err and "[31mx[31mx" not in run.err and "xxxxxxxxxx" not in run.err
    assert_contained(run, max_bytes=2048)


def test_an_endless_event_stream_ends_at_the_timeout(tmp_path, hostile):
    # The call's bound (toolTimeoutMs) ends the stream; the setup keeps its own 15 s (requestTimeoutMs).
    servers = {"drip": {"url": f"{hostile}/endless-sse/mcp", "protocolVersion": "legacy", "toolTimeoutMs": 2000}}
    run = run_cli(tmp_path, servers, "mcp", "call", "drip", "boom")
    assert run.code == 3 and "did not answer the call of tool 'boom' within 2000 ms" in run.err, run.err
    assert_contained(run, max_bytes=2048)
