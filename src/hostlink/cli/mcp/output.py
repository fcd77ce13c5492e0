"""`hostlink mcp call … --output FILE` / `--full`: the whole sanitized result, not the inline window.

The result is bounded as the model's would be, but the command's host session keeps what is
beyond the inline window in its private overflow file (at most 50 MiB a session); the text is
written out whole from there, still sanitized, before the session removes it. FILE is opened
before the call, so a bad path fails before any tool runs: a new file is created 0600, an
existing regular file is overwritten once there is a result to write (a failed call leaves it
as it was), and a symlink, directory or anything else is refused.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from hostlink.cli.session import Fail
from hostlink.host.platform.files import BINARY, CLOEXEC, NOFOLLOW, NONBLOCK, make_blocking

if TYPE_CHECKING:
    from hostlink.host import ToolResult
    from hostlink.host.output import OutputSession


class Sink:
    """Where the whole result goes: FILE (removed again if this command created it and the
    call fails) or stdout."""

    def __init__(self, stream: BinaryIO, path: str | None = None, created: bool = False) -> None:
        self.stream, self.path, self.created = stream, path, created

    def discard(self) -> None:
        if self.path is not None:
            self.stream.close()
            if self.created:
                Path(self.path).unlink(missing_ok=True)


def open_sink(output: str | None, full: bool) -> Sink | None:
    """The sink `--output FILE` or `--full` asks for, or None; refusals are usage errors."""
    if output is not None and full:
        raise Fail("use --output FILE or --full, not both")
    if full:
        if sys.stdout.isatty():
            raise Fail("--full writes the whole result to a pipe or a file, not to a terminal; "
                       "redirect stdout or use --output FILE")
        return Sink(sys.stdout.buffer)
    if output is None:
        return None
    created = True
    try:
        try:  # a new file is ours from the start: 0600, created here
            fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | CLOEXEC | BINARY, 0o600)
        except FileExistsError:
            created = False
            fd = os.open(output, os.O_WRONLY | NOFOLLOW | CLOEXEC | NONBLOCK | BINARY)
    except OSError as error:
        raise Fail(f"--output {output!r} {_why(error)}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise Fail(f"--output {output!r} is not a regular file; not written")
    make_blocking(fd)
    return Sink(os.fdopen(fd, "wb"), output, created)  # emptied only when the result is written


def _why(error: OSError) -> str:
    if error.errno == errno.ELOOP:
        return "is a symbolic link, which is not followed; not written"
    if error.errno == errno.EISDIR:
        return "is a directory; not written"
    if error.errno == errno.ENXIO:  # a FIFO nobody reads (opened without blocking), a device without one
        return "is not a regular file; not written"
    if error.errno == errno.ENOENT:
        return "is in a directory that does not exist"
    return f"cannot be written ({os.strerror(error.errno or 0) or type(error).__name__})"


def write_whole(result: ToolResult, output: OutputSession | None, sink: Sink, as_json: bool) -> None:
    """Write `result` (the command's one call) with its text whole: from the overflow file
    when it was cut. A text cut without a kept file (the session's 50 MiB are spent) fails
    rather than write part of it as if it were all."""
    from hostlink.host.output import compact_json

    overflows = output.overflows if output is not None else []
    whole = overflows[-1] if overflows else None
    if isinstance(whole, str):
        raise Fail(f"the result is too large to write whole ({whole})", "output_too_large")
    if sink.path is not None:
        sink.stream.truncate(0)
    # bound_content joins every text into the first item: the one an overflow file holds whole
    cut = next((item for item in result.content if item.type == "text"), None) if whole is not None else None
    if as_json:
        text = whole.read_text("utf-8") if whole is not None else None
        sink.stream.write(compact_json(result_object(result, text)).encode() + b"\n")
    else:
        for item in result.content:
            if item is cut and whole is not None:
                with whole.open("rb") as source:
                    shutil.copyfileobj(source, sink.stream)
                    source.seek(-1, os.SEEK_END)
                    ends = source.read(1) == b"\n"
            else:
                line = item_line(item)
                sink.stream.write(line.encode())
                ends = line.endswith("\n")
            if not ends:
                sink.stream.write(b"\n")
    sink.stream.flush()
    if sink.path is not None:
        sink.stream.close()


def result_object(result: ToolResult, whole: str | None = None) -> dict[str, Any]:
    """`call --json`: `{isError, content, structuredContent?}`; `whole` replaces the
    first text (the one bound_content joined every text into) when it was cut."""
    texts = iter([whole] if whole is not None else [])
    shown: dict[str, Any] = {"isError": result.is_error, "content": [
        {"type": "text", "text": next(texts, item.text)} if item.type == "text"
        else {"type": "image", "mimeType": item.mime_type, "data": item.data} for item in result.content]}
    structured = (result.details or {}).get("structuredContent")
    if structured is not None:
        shown["structuredContent"] = structured
    return shown


def item_line(item: Any) -> str:
    """A content item as the plain output shows it: the text, or a line saying what image it is."""
    return item.text if item.type == "text" else f"[image {item.mime_type}, {len(item.data)} base64 chars]"
