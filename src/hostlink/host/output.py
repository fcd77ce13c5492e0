"""Bounding of untrusted output, shared by the MCP client and the Claude Code provider.

Text from servers and from Claude is data: terminal escape and control sequences are
stripped, at most 50 KiB or 2,000 lines stay inline (with an explicit truncation line), and
the full sanitized text goes to a private overflow file within a per-session budget. The
input is processed in chunks, so a 50 MiB result is bounded in one pass without holding
further copies of it in memory.
"""

from __future__ import annotations

import binascii
import json
import re
from collections.abc import Iterable, Sequence
from io import BufferedWriter
from pathlib import Path
from typing import Any

from hostlink.host.messages import IMAGE_MIME_TYPES, ImageContent, TextContent
from hostlink.host.private import (
    PrivateStateError,
    create_private_dir,
    open_private_file,
    remove_private_dir,
)

MAX_INLINE_BYTES = 50 * 1024
MAX_INLINE_LINES = 2000
SESSION_OVERFLOW_BUDGET = 50 * 1024 * 1024
MAX_INLINE_IMAGES = 4
MAX_IMAGE_BASE64 = 2 * 1024 * 1024
TRUNCATED = "[output truncated: "  # how the line that says what was cut begins

_CHUNK_CHARS = 1 << 20
_MAX_PENDING = 256  # an unfinished escape sequence longer than this is dropped as garbage

# Three kinds of match, each branch starting with a literal or a class, so the regex engine
# can skip ahead to candidate characters. String sequences (OSC, DCS, SOS, PM, APC) run to
# BEL or ST; CSI to its final byte; other ESC sequences to theirs; each may open with ESC
# or, for most, with its single C1 control. Everything else below 0x20 except TAB and LF,
# DEL, the C1 range, the bidirectional overrides (which reorder what the reader sees) and
# lone surrogates (not encodable) goes as a single character.
_ESC_OPENED = r"\x1b(?:[\]PX^_][^\x07\x1b\x9c]*(?:\x07|\x9c|\x1b\\)?|\[[0-?]*[ -/]*[@-~]?|[ -/]*[0-~]?)"
_C1_OPENED = r"[\x90\x98\x9d\x9e\x9f][^\x07\x1b\x9c]*(?:\x07|\x9c|\x1b\\)?|\x9b[0-?]*[ -/]*[@-~]?"
_SINGLE = r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
_SEQUENCE = re.compile(f"{_ESC_OPENED}|{_C1_OPENED}|{_SINGLE}")
# The regex engine's cost is per match, so when no C1 control opens a sequence the same
# matches go in two cheaper passes (see ``_strip_sequences``): the ESC-opened ones, whose
# literal first character lets the engine jump between candidates, then the single
# characters, which in ASCII text one ``str.translate`` drops.
_ESC_SEQUENCE = re.compile(_ESC_OPENED)
_SINGLE_CHARACTER = re.compile(_SINGLE)
_ASCII_SINGLES = dict.fromkeys([*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F])
# ("\x1b[" alone is a CSI still waiting for its final byte, not a finished two-byte escape.)
_COMPLETE_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x9b[0-?]*[ -/]*[@-~]|\x1b(?!\[)[ -/]*[0-~]")
_ESC_STRING_KINDS = ("]", "P", "X", "^", "_")  # what follows ESC to open a string sequence
_C1_STRING_OPENERS = ("\x90", "\x98", "\x9d", "\x9e", "\x9f")
_C1_OPENERS = (*_C1_STRING_OPENERS, "\x9b")
_STRING_END = re.compile(r"[\x07\x9c\x1b]")

# A fast, byte-level proof that an encoded chunk needs no stripping: no C0 control but TAB
# and LF, no DEL, and no UTF-8 encoding of a C1 control or a bidirectional override.
_C0_DEL = bytes(range(0, 9)) + bytes(range(11, 32)) + b"\x7f"
_C0_DEL_AND_LEADS = _C0_DEL + b"\xc2\xe2"
_RISKY_MULTIBYTE = re.compile(rb"\xc2[\x80-\x9f]|\xe2\x80[\xaa-\xae]|\xe2\x81[\xa6-\xa9]")


def _is_clean(data: bytes) -> bool:
    if len(data.translate(None, _C0_DEL_AND_LEADS)) == len(data):
        return True
    return len(data.translate(None, _C0_DEL)) == len(data) and _RISKY_MULTIBYTE.search(data) is None


class StreamSanitizer:
    """Strips control sequences from a stream of chunks, across chunk boundaries.

    `feed` returns the clean text it can be sure of; a sequence split between two chunks
    is held back (or its string body dropped) until the next one. `final=True` ends it.
    """

    def __init__(self) -> None:
        self._pending = ""  # an unfinished sequence carried to the next chunk
        self._in_string = False  # inside a string sequence whose body is being dropped

    @property
    def idle(self) -> bool:
        return not self._pending and not self._in_string

    def feed(self, chunk: str, final: bool = False) -> str:
        text = self._pending + chunk
        self._pending = ""
        if self._in_string:
            end = _STRING_END.search(text)
            if end is None:
                return ""
            self._in_string = False
            # BEL and ST end the string; an ESC ends it too and starts whatever follows.
            text = text[end.start() :] if end.group() == "\x1b" else text[end.end() :]
        cut = len(text) if final else self._open_tail(text)
        return _strip_sequences(text[:cut])

    def _open_tail(self, text: str) -> int:
        """Where an unfinished sequence at the end of `text` starts (or `len(text)`)."""
        last_escape = text.rfind("\x1b")
        # Of the ESCs only the last can open a string left unfinished: an ESC ends any body.
        opening = last_escape >= 0 and text.startswith(_ESC_STRING_KINDS, last_escape + 1)
        opener = last_escape if opening else -1
        may_hold_c1 = not text.isascii()
        if may_hold_c1:
            opener = max(opener, *(text.rfind(candidate) for candidate in _C1_STRING_OPENERS))
        if opener >= 0:
            body = opener + (2 if text[opener] == "\x1b" else 1)
            if _STRING_END.search(text, body) is None:
                self._in_string = True
                return opener
        start = max(last_escape, text.rfind("\x9b")) if may_hold_c1 else last_escape
        sequence = _SEQUENCE.match(text, start) if start >= 0 else None  # an ESC or CSI always matches
        if (sequence is not None and sequence.end() == len(text)
                and _COMPLETE_ESCAPE.fullmatch(text, start) is None):
            if len(text) - start <= _MAX_PENDING:
                self._pending = text[start:]
            return start
        return len(text)


def _strip_sequences(text: str) -> str:
    """`_SEQUENCE.sub("", text)` in two cheaper passes when that gives the same text.

    With no C1 opener in the text every match of `_SEQUENCE` either starts at an ESC (the
    first pass takes exactly those) or is one character outside them (the second pass).
    """
    if not text.isascii() and any(opener in text for opener in _C1_OPENERS):
        return _SEQUENCE.sub("", text)
    text = _ESC_SEQUENCE.sub("", text)
    return text.translate(_ASCII_SINGLES) if text.isascii() else _SINGLE_CHARACTER.sub("", text)


def strip_controls(text: str) -> str:
    """Remove terminal escape sequences and control characters, keeping newlines and tabs."""
    if text.isprintable():  # no control, format (bidi) or surrogate character: nothing to strip
        return text
    return StreamSanitizer().feed(text, final=True)


def _sanitized_chunks(text: str) -> Iterable[bytes]:
    """The sanitized text as UTF-8 chunks; a clean chunk costs one encode and one scan."""
    sanitizer = StreamSanitizer()
    last = len(text)
    for start in range(0, last, _CHUNK_CHARS):
        end = start + _CHUNK_CHARS
        chunk = text[start:end]
        if sanitizer.idle:
            try:
                data = chunk.encode("utf-8")
            except UnicodeEncodeError:  # lone surrogates: the slow path drops them
                data = None
            if data is not None and _is_clean(data):
                yield data
                continue
        piece = sanitizer.feed(chunk, final=end >= last)
        if piece:
            yield piece.encode("utf-8")


class OutputSession:
    """Per host session: owns the private overflow directory and its byte budget."""

    def __init__(self, budget: int = SESSION_OVERFLOW_BUDGET) -> None:
        self._budget = budget
        self._used = 0
        self._dir: Path | None = None
        self._count = 0
        # Each text cut so far: the file holding it whole, or why none was kept. A host that
        # writes a result out whole (a command's --output) reads it from there.
        self.overflows: list[Path | str] = []

    @property
    def used_bytes(self) -> int:
        return self._used

    def _new_file(self) -> tuple[Path, BufferedWriter]:
        if self._dir is None:
            self._dir = create_private_dir("output")
        self._count += 1
        name = f"overflow-{self._count:04d}.txt"
        return self._dir / name, open_private_file(self._dir, name)

    def close(self) -> None:
        """Remove every overflow file of the session."""
        if self._dir is not None:
            remove_private_dir(self._dir)
            self._dir = None
        self._used = 0


class _Overflow:
    """Writes the full text to one overflow file while the session budget lasts."""

    def __init__(self, session: OutputSession | None) -> None:
        self._session = session
        self._path: Path | None = None
        self._handle: BufferedWriter | None = None
        self._written = 0
        self.refused = session is None
        self.reason: str | None = None  # why a session's overflow was not kept

    def write(self, data: bytes) -> None:
        session = self._session
        if self.refused or session is None:
            return
        if session._used + len(data) > session._budget:
            self._abandon(session, "session overflow budget of 50 MiB reached")
            return
        try:
            if self._handle is None:
                self._path, self._handle = session._new_file()
            self._handle.write(data)
        except (PrivateStateError, OSError) as error:
            # A planted or foreign runtime root, a full disk: the inline part still stands.
            shown = str(error) if isinstance(error, PrivateStateError) else type(error).__name__
            self._abandon(session, f"no private overflow file: {shown}")
            return
        self._written += len(data)
        session._used += len(data)

    def _abandon(self, session: OutputSession, reason: str) -> None:
        self.refused, self.reason = True, reason
        if self._handle is not None and self._path is not None:
            self._handle.close()
            self._path.unlink(missing_ok=True)
            session._used -= self._written
            self._handle = None
            self._path = None

    def finish(self) -> Path | None:
        if self._handle is not None:
            self._handle.close()
        path = None if self.refused else self._path
        if self._session is not None:
            self._session.overflows.append(path or self.reason or "not kept")
        return path


def bound_text(text: str, session: OutputSession | None) -> str:
    """Sanitize `text` and keep at most 50 KiB / 2,000 lines inline.

    When the text is longer, the inline part ends on a whole line where possible (never
    inside a UTF-8 character) and an explicit line says what was cut and where the full
    text is: a private overflow file, or a note that none was kept (no session or the
    session's budget is spent).
    """
    if len(text) <= MAX_INLINE_BYTES // 4 and text.count("\n") < MAX_INLINE_LINES:
        return strip_controls(text)  # inline whatever it encodes to (at most 4 bytes a character)
    head: list[bytes] = []
    head_bytes = 0
    head_lines = 0
    total_bytes = 0
    total_lines = 0
    overflow: _Overflow | None = None  # once the text is cut: the rest goes there
    last_char_newline = True
    for data in _sanitized_chunks(text):
        total_bytes += len(data)
        newlines = data.count(b"\n")
        total_lines += newlines
        last_char_newline = data.endswith(b"\n")
        if overflow is None:
            lines_if_kept = head_lines + newlines + (0 if last_char_newline else 1)
            if head_bytes + len(data) <= MAX_INLINE_BYTES and lines_if_kept <= MAX_INLINE_LINES:
                head.append(data)
                head_bytes += len(data)
                head_lines += newlines
                continue
            overflow = _Overflow(session)
            for kept in head:
                overflow.write(kept)
            head.append(_fit(data, MAX_INLINE_BYTES - head_bytes, MAX_INLINE_LINES - head_lines))
        overflow.write(data)
    if not last_char_newline:
        total_lines += 1
    inline = b"".join(head)
    if overflow is None:
        return inline.decode("utf-8")
    inline = _cut_at_line(inline)
    shown_lines = inline.count(b"\n") + (0 if inline.endswith(b"\n") or not inline else 1)
    path = overflow.finish()
    where = f"full output saved to {path}" if path else "full output not kept"
    if path is None and overflow.reason is not None:
        where += f" ({overflow.reason})"
    notice = (
        f"{TRUNCATED}showing {shown_lines} of {counted(total_lines, 'line')}, "
        f"{len(inline)} of {counted(total_bytes, 'byte')}; {where}]"
    )
    return inline.decode("utf-8") + ("" if inline.endswith(b"\n") or not inline else "\n") + notice


def _fit(data: bytes, max_bytes: int, max_lines: int) -> bytes:
    """The longest prefix of `data` within both limits (may end mid-character)."""
    end = min(len(data), max(max_bytes, 0))
    newline = -1
    for _ in range(max(max_lines, 0)):
        newline = data.find(b"\n", newline + 1, end)
        if newline < 0:
            break
    else:
        end = newline + 1 if max_lines > 0 else 0
    return data[:end]


def _cut_at_line(data: bytes) -> bytes:
    """End on the last whole line if there is one; otherwise on a whole UTF-8 character."""
    newline = data.rfind(b"\n")
    if newline >= 0:
        return data[: newline + 1]
    return data.decode("utf-8", errors="ignore").encode("utf-8")


_JSON_UNSAFE = re.compile(r"[\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def one_line(text: str | None, limit: int) -> str:
    """Untrusted text as one sanitized line of at most `limit` characters (`…` if cut)."""
    text = " ".join(strip_controls(text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def counted(number: int, noun: str) -> str:
    """`1 tool`, `2 tools`: a count with its noun in the right number."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def did_you_mean(name: str, known: Sequence[str]) -> str:
    """`"; did you mean 'echo'?"` for a close known name (sanitized), or `""`."""
    import difflib

    close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.6)
    if not close:
        return ""
    return "; did you mean " + " or ".join(repr(one_line(match, 64)) for match in close) + "?"


def compact_json(value: Any) -> str:
    """Compact JSON for structured results, safe to print.

    `json.dumps` already escapes C0 controls; the other characters a terminal would act on
    are escaped too (stripping them could let a C1 sequence swallow JSON punctuation).
    """
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return _JSON_UNSAFE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def _is_base64(data: str) -> bool:
    try:
        binascii.a2b_base64(data.encode("ascii"), strict_mode=True)
    except (binascii.Error, UnicodeEncodeError):
        return False
    return True


def bound_images(images: Sequence[ImageContent]) -> tuple[list[ImageContent], str | None]:
    """Keep at most four valid inline images of at most 2 MiB base64 each.

    Returns the kept images and an explicit line about the omitted ones (or None).
    """
    kept: list[ImageContent] = []
    too_many = too_large = bad_type = bad_data = 0
    for image in images:
        if image.mime_type not in IMAGE_MIME_TYPES:
            bad_type += 1
        elif len(image.data) > MAX_IMAGE_BASE64:
            too_large += 1
        elif not _is_base64(image.data):
            bad_data += 1
        elif len(kept) >= MAX_INLINE_IMAGES:
            too_many += 1
        else:
            kept.append(image)
    reasons = []
    if too_large:
        reasons.append(f"{too_large} over 2 MiB of base64")
    if too_many:
        reasons.append(f"{too_many} beyond the limit of {MAX_INLINE_IMAGES} inline images")
    if bad_type:
        reasons.append(f"{bad_type} of an unsupported image type")
    if bad_data:
        reasons.append(f"{bad_data} not valid base64")
    if not reasons:
        return kept, None
    omitted = too_large + too_many + bad_type + bad_data
    noun = "image" if omitted == 1 else "images"
    return kept, f"[{omitted} {noun} omitted: {'; '.join(reasons)}]"


def bound_content(
    items: Sequence[TextContent | ImageContent], session: OutputSession | None
) -> list[TextContent | ImageContent]:
    """Apply every output rule to mixed content, in the order given: adjacent texts joined,
    images limited and kept where they were, a notice about omitted images last.

    When the texts together are too long for the inline window, they are bounded as one
    text (one overflow file holds them whole) that comes first, before the kept images.
    """
    kept, notice = bound_images([item for item in items if isinstance(item, ImageContent)])
    runs: list[list[str] | ImageContent] = []  # the texts between images, and the images kept
    next_kept = 0
    for item in [*items, *([TextContent(notice)] if notice else [])]:
        if isinstance(item, ImageContent):
            if next_kept < len(kept) and item is kept[next_kept]:  # kept: an in-order subsequence
                runs.append(item)
                next_kept += 1
        elif runs and isinstance(runs[-1], list):
            runs[-1].append(item.text)
        else:
            runs.append([item.text])
    texts = ["\n".join(run) for run in runs if isinstance(run, list)]
    if len(texts) > 1 and not _fits_inline("\n".join(texts)):
        runs = [["\n".join(texts)], *kept]
    return [run if isinstance(run, ImageContent) else TextContent(bound_text("\n".join(run), session))
            for run in runs]


def _fits_inline(text: str) -> bool:
    """Whether `text` is sure to stay inline whole (stripping controls only shortens it)."""
    return text.count("\n") < MAX_INLINE_LINES and len(text.encode("utf-8", "surrogatepass")) <= MAX_INLINE_BYTES
