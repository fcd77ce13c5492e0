"""hostlink.host.output: escape stripping, inline limits, overflow files, images."""

import json
import os
import re
import stat
import tracemalloc

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from hostlink.host import ImageContent, TextContent, output
from hostlink.host.output import (
    MAX_INLINE_BYTES,
    MAX_INLINE_LINES,
    TRUNCATED,
    OutputSession,
    bound_content,
    bound_images,
    bound_text,
    compact_json,
    strip_controls,
)

NOTICE = re.compile(r"\[output truncated: showing (\d+) of (\d+) lines?, (\d+) of (\d+) bytes?; (.*)\]$")


@pytest.fixture
def session(tmp_path, monkeypatch):
    monkeypatch.setenv("HOSTLINK_RUNTIME_DIR", str(tmp_path / "runtime"))
    session = OutputSession()
    yield session
    session.close()


def overflow_path(result: str):
    match = NOTICE.search(result)
    assert match, result[-300:]
    where = match.group(5)
    assert where.startswith("full output saved to "), where
    return where.removeprefix("full output saved to ")


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("\x1b[31mred\x1b[0m", "red"),  # CSI colour
        ("a\x1b[2J\x1b[Hb", "ab"),  # clear screen, cursor home
        ("\x1b[?1049h", ""),  # private mode
        ("x\x9b31my", "xy"),  # C1 CSI
        ("t\x1b]0;evil title\x07u", "tu"),  # OSC title, BEL
        ("t\x1b]8;;https://x\x1b\\link\x1b]8;;\x1b\\u", "tlinku"),  # OSC 8 hyperlink, ST
        ("a\x9d52;c;Zm9v\x9cb", "ab"),  # C1 OSC clipboard
        ("a\x1bPqdata\x1b\\b", "ab"),  # DCS
        ("a\x1b_apc\x1b\\b", "ab"),  # APC
        ("a\x1b(Bb", "ab"),  # charset designation
        ("a\x1b7b\x1b8c", "abc"),  # save/restore cursor
        ("bell\x07 back\x08space\x7f", "bell backspace"),
        ("nul\x00 vt\x0b ff\x0c cr\r", "nul vt ff cr"),
        ("c1\x85\x8d\x9f", "c1"),
        ("keep\ttabs\nand lines\n", "keep\ttabs\nand lines\n"),
        ("crlf\r\nline", "crlf\nline"),
        ("rtl\u202eoverride\u2066", "rtloverride"),
        ("unicode ok: é ñ 日本 🎉", "unicode ok: é ñ 日本 🎉"),
        ("unterminated \x1b]0;title", "unterminated "),
        ("lone esc \x1b", "lone esc "),
        ("bad surrogate \ud800!", "bad surrogate !"),
    ],
)
def test_strip_controls(raw, clean):
    assert strip_controls(raw) == clean


def test_the_printable_fast_path_keeps_what_the_sanitizer_keeps():
    """strip_controls returns printable text as it is: the sanitizer keeps every printable
    code point, so the shortcut can never let through what the full pass would strip."""
    printable = [chr(code) for code in range(0x110000) if chr(code).isprintable()]
    assert output.StreamSanitizer().feed("".join(printable), final=True) == "".join(printable)
    assert strip_controls("plain \u202e") == "plain "  # a bidi override is not printable: stripped


def test_sequences_split_across_chunks(monkeypatch):
    monkeypatch.setattr(output, "_CHUNK_CHARS", 3)
    text = "ab\x1b[31mcd\x1b]0;title\x07ef\x1b]8;;u\x1b\\gh\x1b(Bij"
    assert b"".join(output._sanitized_chunks(text)) == b"abcdefghij"


@given(st.text())
@settings(max_examples=300)
def test_no_control_survives(text):
    clean = strip_controls(text)
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", clean)
    clean.encode("utf-8")  # never a lone surrogate


TERMINAL_CHARACTERS = [*list("ab\n\t[];0P_^X\\7m"), "\x1b", "\x07", "\x9b", "\x9c", "\x9d", "\x90", "\r", "é", "\u202e"]
TERMINAL_ALPHABET = st.sampled_from(TERMINAL_CHARACTERS)
C1_OPENERS = {"\x90", "\x98", "\x9b", "\x9d", "\x9e", "\x9f"}
WITHOUT_C1_OPENERS = st.sampled_from([c for c in TERMINAL_CHARACTERS if c not in C1_OPENERS] + ["\x85", "\ud800"])
ASCII_ONLY = st.sampled_from([c for c in TERMINAL_CHARACTERS if c.isascii()] + ["\x00", "\x7f"])


@given(st.one_of(st.text(), *(st.lists(alphabet, max_size=80).map("".join)
                             for alphabet in (TERMINAL_ALPHABET, WITHOUT_C1_OPENERS, ASCII_ONLY))))
@example("a\x1b[31mb\x1b]0;t\x07c\x07\r\x00d")  # ASCII: the escape pass, then translate
@example("é\x1b]0;t\x9cx\x85\x1b[1m\u202e\ud800")  # no C1 opener: the escape pass, then singles
@example("\x9d0;t\x1b[31m\x07e\x9b1m")  # a C1 opener: the one regex
@settings(max_examples=500)
def test_the_two_pass_strip_makes_what_the_one_regex_makes(text):
    assert output._strip_sequences(text) == output._SEQUENCE.sub("", text)


@given(st.lists(TERMINAL_ALPHABET, max_size=80).map("".join), st.integers(min_value=1, max_value=16))
@example("\x1b[a", 1)  # found by this property: a CSI split right after "\x1b[" leaked its final byte
@settings(max_examples=500)
def test_chunked_sanitizing_equals_whole_text_sanitizing(text, chunk):
    original = output._CHUNK_CHARS
    output._CHUNK_CHARS = chunk
    try:
        chunked = b"".join(output._sanitized_chunks(text))
    finally:
        output._CHUNK_CHARS = original
    assert chunked == strip_controls(text).encode("utf-8")


@given(st.one_of(st.text(), st.lists(TERMINAL_ALPHABET, max_size=80).map("".join)))
@settings(max_examples=300)
def test_a_text_that_fits_inline_is_what_the_chunked_pass_makes_of_it(text):
    assert bound_text(text, None) == b"".join(output._sanitized_chunks(text)).decode("utf-8")


def test_small_text_is_inline_and_untouched(session):
    assert bound_text("hello\nworld", session) == "hello\nworld"
    assert session.used_bytes == 0


def test_truncation_at_the_line_limit(session):
    text = "".join(f"line {i}\n" for i in range(MAX_INLINE_LINES + 500))
    result = bound_text(text, session)
    inline, notice = result.rsplit("\n", 1)
    assert inline.count("\n") == MAX_INLINE_LINES - 1
    assert inline.splitlines()[-1] == f"line {MAX_INLINE_LINES - 1}"
    shown, total, _, _, _ = NOTICE.search(notice).groups()
    assert (int(shown), int(total)) == (MAX_INLINE_LINES, MAX_INLINE_LINES + 500)
    path = overflow_path(result)
    with open(path, encoding="utf-8") as handle:
        assert handle.read() == text


def test_exactly_the_line_limit_stays_inline(session):
    text = "x\n" * MAX_INLINE_LINES
    assert bound_text(text, session) == text
    one_more = text + "y"
    assert "[output truncated" in bound_text(one_more, session)


def test_truncation_at_the_byte_limit_keeps_utf8_whole(session):
    text = "日本語" * 40_000  # 3 bytes a character, one long line
    result = bound_text(text, session)
    inline = result[: result.index("\n[output truncated")]
    assert len(inline.encode("utf-8")) <= MAX_INLINE_BYTES
    assert len(inline.encode("utf-8")) > MAX_INLINE_BYTES - 4
    assert text.startswith(inline)
    shown_bytes, total_bytes = NOTICE.search(result).group(3, 4)
    assert int(total_bytes) == len(text.encode("utf-8"))
    assert int(shown_bytes) == len(inline.encode("utf-8"))


def test_byte_limit_cuts_at_a_line_boundary_when_there_is_one(session):
    text = ("é" * 99 + "\n") * 2000  # 199 bytes a line
    result = bound_text(text, session)
    inline = result[: result.index("[output truncated")]
    assert inline.endswith("\n")
    assert all(line == "é" * 99 for line in inline.splitlines())
    assert len(inline.encode()) <= MAX_INLINE_BYTES


def test_overflow_file_is_private_and_removed_at_shutdown(tmp_path, monkeypatch):
    monkeypatch.setenv("HOSTLINK_RUNTIME_DIR", str(tmp_path / "runtime"))
    session = OutputSession()
    path = overflow_path(bound_text("z" * (MAX_INLINE_BYTES + 1), session))
    file_mode = stat.S_IMODE(os.stat(path).st_mode)
    dir_mode = stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode)
    assert (file_mode, dir_mode) == (0o600, 0o700)
    assert os.path.dirname(path).startswith(str(tmp_path / "runtime"))
    session.close()
    assert not os.path.exists(path)
    assert not os.path.exists(os.path.dirname(path))
    assert os.listdir(tmp_path / "runtime") == []


def test_overflow_text_is_sanitized(session):
    text = ("\x1b[31mred\x1b[0m\n" * 3000)
    result = bound_text(text, session)
    assert "\x1b" not in result
    with open(overflow_path(result), encoding="utf-8") as handle:
        assert handle.read() == "red\n" * 3000


def test_session_budget_is_enforced(tmp_path, monkeypatch):
    monkeypatch.setenv("HOSTLINK_RUNTIME_DIR", str(tmp_path / "runtime"))
    session = OutputSession(budget=300_000)
    first = bound_text("a" * 200_000, session)
    overflow_path(first)
    second = bound_text("b" * 200_000, session)  # would exceed the budget
    assert "full output not kept (session overflow budget of 50 MiB reached)" in second
    assert session.used_bytes == 200_000
    assert len(os.listdir(os.path.dirname(overflow_path(first)))) == 2  # marker + one file
    third = bound_text("c" * 90_000, session)
    overflow_path(third)
    session.close()


def test_without_a_session_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.setenv("HOSTLINK_RUNTIME_DIR", str(tmp_path / "runtime"))
    result = bound_text("q" * (MAX_INLINE_BYTES * 2), None)
    assert result.endswith("full output not kept]")
    assert not (tmp_path / "runtime").exists() or os.listdir(tmp_path / "runtime") == []


def test_fifty_mib_is_bounded_in_one_pass_with_bounded_memory(session):
    line = "0123456789abcdef" * 4 + "\x1b[1m\n"
    text = line * (50 * 1024 * 1024 // len(line))
    tracemalloc.start()
    result = bound_text(text, session)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 16 * 1024 * 1024, peak  # a few chunks, never another copy of 50 MiB
    path = overflow_path(result)
    assert os.path.getsize(path) == len(text) - text.count("\x1b[1m") * 4
    assert session.used_bytes == os.path.getsize(path)


def test_the_full_fifty_mib_budget_fits_one_result(tmp_path, monkeypatch):
    monkeypatch.setenv("HOSTLINK_RUNTIME_DIR", str(tmp_path / "runtime"))
    session = OutputSession()
    text = "y" * (50 * 1024 * 1024)
    overflow_path(bound_text(text, session))
    assert "not kept" in bound_text("z" * (MAX_INLINE_BYTES + 1), session)
    session.close()


def png(size: int) -> ImageContent:
    return ImageContent("A" * size, "image/png")


def test_image_limits():
    kept, notice = bound_images([png(12)] * 6)
    assert len(kept) == 4
    assert notice == "[2 images omitted: 2 beyond the limit of 4 inline images]"
    kept, notice = bound_images([png(2 * 1024 * 1024 + 1), png(2 * 1024 * 1024)])
    assert kept == [png(2 * 1024 * 1024)]
    assert notice == "[1 image omitted: 1 over 2 MiB of base64]"
    kept, notice = bound_images([ImageContent("AAAA", "image/svg+xml")])
    assert kept == [] and "unsupported image type" in notice
    assert bound_images([png(4)]) == ([png(4)], None)


def test_an_image_that_is_not_base64_is_omitted_and_the_rest_kept():
    # Hostile server data: before, the llm host's decoding raised and lost the whole result.
    items = [TextContent("the text stays"), ImageContent("not base64!", "image/png"), png(8)]
    result = bound_content(items, None)
    assert result == [TextContent("the text stays"), png(8), TextContent("[1 image omitted: 1 not valid base64]")]


def test_a_planted_runtime_root_keeps_the_inline_part_with_a_reason(tmp_path, monkeypatch):
    planted = tmp_path / "planted"
    planted.symlink_to(tmp_path)  # another user's or a link: never written through
    monkeypatch.setenv("HOSTLINK_RUNTIME_DIR", str(planted))
    session = OutputSession()
    text = bound_text("line\n" * 20_000, session)
    assert text.startswith("line\n") and text.endswith(
        "full output not kept (no private overflow file: the hostlink runtime directory is not a real directory)]")
    assert session.used_bytes == 0
    session.close()


def test_bound_content_keeps_the_order_joins_adjacent_texts_and_reports_images(session):
    items = [TextContent("one\x1b[0m"), TextContent("two"), png(8), TextContent("three")] + [png(8)] * 4
    result = bound_content(items, session)
    assert result == [TextContent("one\ntwo"), png(8), TextContent("three"), png(8), png(8), png(8),
                      TextContent("[1 image omitted: 1 beyond the limit of 4 inline images]")]
    assert bound_content([png(8), TextContent("after")], session) == [png(8), TextContent("after")]


def test_texts_around_images_too_long_together_are_bounded_as_one(session):
    line = "x" * 99 + "\n"
    result = bound_content([TextContent(line * 300), png(8), TextContent(line * 300)], session)
    assert [item.type for item in result] == ["text", "image"]
    assert result[0].text.startswith(line) and TRUNCATED in result[0].text.splitlines()[-1]


def test_compact_json_has_no_raw_controls():
    assert compact_json({"a": [1, 2], "b": "x\x1b[31my\x9b\u202e"}) == r'{"a":[1,2],"b":"x\u001b[31my\u009b\u202e"}'
    assert json.loads(compact_json({"k": "\x9b\"}"})) == {"k": "\x9b\"}"}
