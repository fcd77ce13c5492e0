"""What the MCP SDK logs reaches stderr as bounded lines: each kind once, at most MAX_LINES, a
record that does not format shown by its template, and a closed stderr is no crash."""

from __future__ import annotations

import io
import logging

from hostlink.mcp.runtime import sdk_log


def record(msg, *args, name="mcp.client"):
    return logging.LogRecord(name, logging.WARNING, __file__, 1, msg, args, None)


def test_each_kind_once_then_one_line_saying_the_rest_is_not_shown(capsys):
    handler = sdk_log._OneLinePerKind()
    for number in range(sdk_log.MAX_LINES + 5):
        handler.emit(record(f"event {number} %s", "x"))
        handler.emit(record(f"event {number} %s", "y"))  # the same kind: not shown again
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == sdk_log.MAX_LINES + 1
    assert lines[0] == "hostlink: MCP SDK warning: event 0 x"
    assert lines[-1] == "hostlink: MCP SDK warning: further MCP SDK messages are not shown"


def test_a_record_whose_arguments_do_not_format_shows_its_template(capsys):
    sdk_log._OneLinePerKind().emit(record("bad %d\nline", "not a number"))
    assert capsys.readouterr().err == "hostlink: MCP SDK warning: bad %d line\n"


def test_a_closed_stderr_is_not_an_error(monkeypatch):
    closed = io.StringIO()
    closed.close()
    monkeypatch.setattr("sys.stderr", closed)
    sdk_log._OneLinePerKind().emit(record("lost"))  # nothing to tell, and nothing raised
