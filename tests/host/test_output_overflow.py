"""Bounded output past the easy cases: an overflow file already being written when the session's
budget runs out is removed (and its bytes given back), text that starts clean after stripped
controls keeps that start in the file, and lone surrogates never reach the text or the file."""

from __future__ import annotations

import os

from hostlink.host.output import MAX_INLINE_BYTES, OutputSession, bound_text


def overflow_file(result):
    return result.rsplit("full output saved to ", 1)[1].rstrip("]")


def test_a_file_cut_off_by_the_budget_midway_is_removed_and_its_bytes_given_back(runtime_dir):
    session = OutputSession(budget=(3 << 20) // 2)  # room for the first 1 MiB chunk, not the second
    result = bound_text("a" * (3 << 20), session)
    assert result.endswith("full output not kept (session overflow budget of 50 MiB reached)]")
    assert session.used_bytes == 0
    assert [name for name in os.listdir(runtime_dir / os.listdir(runtime_dir)[0]) if not name.startswith(".")] == []
    session.close()


def test_a_start_kept_inline_before_the_cut_is_in_the_file_too(runtime_dir):
    session = OutputSession()
    text = "\x07" * ((1 << 20) - 6) + "start\n" + "b" * (2 * MAX_INLINE_BYTES)
    result = bound_text(text, session)
    assert result.startswith("start\n")
    with open(overflow_file(result), encoding="utf-8") as handle:
        assert handle.read() == "start\n" + "b" * (2 * MAX_INLINE_BYTES)
    session.close()


def test_lone_surrogates_are_dropped_from_the_text_and_the_file(runtime_dir):
    session = OutputSession()
    result = bound_text("x\ud800y\n" * (MAX_INLINE_BYTES // 2), session)
    assert "\ud800" not in result and result.startswith("xy\nxy\n")
    with open(overflow_file(result), encoding="utf-8") as handle:
        assert handle.read() == "xy\n" * (MAX_INLINE_BYTES // 2)
    session.close()
