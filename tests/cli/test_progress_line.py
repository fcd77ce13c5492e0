"""The terminal's progress line: a bar when the server gives a total, a spinner when it does not,
and at most ten redraws a second however many notifications arrive."""

from __future__ import annotations

import io
import types

from hostlink.cli import progress_line
from hostlink.cli.progress_line import ERASE_LINE, ProgressLine


def clocked(monkeypatch, now):
    monkeypatch.setattr(progress_line, "time", types.SimpleNamespace(monotonic=lambda: now[0]))


def test_without_a_total_a_spinner_turns_and_the_count_shows(monkeypatch):
    now, stream = [100.0], io.StringIO()
    clocked(monkeypatch, now)
    line = ProgressLine(stream)
    line(3, None, "indexing")
    now[0] += 1
    line(float("nan"), 0, "still\nindexing")
    assert stream.getvalue() == f"{ERASE_LINE}/ 3 indexing{ERASE_LINE}- ? still indexing"


def test_a_flood_of_notifications_redraws_once_per_tenth_of_a_second(monkeypatch):
    now, stream = [100.0], io.StringIO()
    clocked(monkeypatch, now)
    line = ProgressLine(stream)
    for step in range(50):
        line(step, 50, None)
    now[0] += 0.25
    line(25, 50, "half")
    assert stream.getvalue().count(ERASE_LINE) == 2
    assert stream.getvalue().endswith(f"[{'#' * 10}{'.' * 10}] 25/50 half")
    line.clear()
    line.clear()  # erased once: nothing is drawn any more
    assert stream.getvalue().endswith(f"25/50 half{ERASE_LINE}")
