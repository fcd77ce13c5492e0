"""serve's log filter on its own: one line per kind a minute, then how many were left out."""

from __future__ import annotations

import logging

from hostlink.serve import connections
from hostlink.serve.connections import OncePerKind


def record(message: str) -> logging.LogRecord:
    return logging.LogRecord("uvicorn.error", logging.WARNING, __file__, 1, message, None, None)


def test_a_repeated_kind_shows_once_a_minute_then_counts_what_it_left_out(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(connections.time, "monotonic", lambda: now[0])
    quiet = OncePerKind()
    first = record("connection refused: too many open connections")
    assert quiet.filter(first) and first.getMessage() == "connection refused: too many open connections"
    assert not quiet.filter(record("connection refused: too many open connections"))
    assert not quiet.filter(record("connection refused: too many open connections"))
    assert quiet.filter(record("another kind"))
    now[0] += connections.LOG_EVERY_SECONDS
    again = record("connection refused: too many open connections")
    assert quiet.filter(again)
    assert again.getMessage() == ("connection refused: too many open connections "
                                  "(and 2 more like it in the last minute)")  # fmt: skip
