"""A one-line progress display on a terminal: a tool call's progress and the server's message.

Only for a person at a terminal (stderr is a tty): the line is redrawn in place with a
carriage return, never wider than the terminal, and erased when the call ends, so a script
reading stdout or stderr through a pipe never sees it. The server's message is untrusted:
sanitized to one short line before it is drawn.
"""

from __future__ import annotations

import math
import shutil
import time
from typing import TextIO

from hostlink.host.output import one_line

BAR_CELLS = 20
MESSAGE_CHARS = 200  # of the server's message, before the line is fitted to the terminal
REDRAW_SECONDS = 0.1  # a flood of notifications redraws at most ten times a second
SPINNER = "|/-\\"
ERASE_LINE = "\r\x1b[K"  # back to column 0, erase to the end of the line


class ProgressLine:
    """A progress listener (`hostlink.host.progress`) drawing on `stream`."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._drawn = False
        self._last = -math.inf
        self._turns = 0

    def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        now = time.monotonic()
        if now - self._last < REDRAW_SECONDS:
            return
        self._last = now
        width = max(shutil.get_terminal_size().columns - 1, 10)
        line = f"{self._gauge(progress, total)} {one_line(message, MESSAGE_CHARS)}"
        self._stream.write(ERASE_LINE + one_line(line, width))
        self._stream.flush()
        self._drawn = True

    def _gauge(self, progress: float, total: float | None) -> str:
        """`[#####...............] 1/4` with a known total, else a spinner and the count."""
        shown = f"{progress:g}" if math.isfinite(progress) else "?"
        if total is not None and math.isfinite(total) and total > 0 and math.isfinite(progress):
            filled = round(BAR_CELLS * min(max(progress / total, 0.0), 1.0))
            return f"[{'#' * filled}{'.' * (BAR_CELLS - filled)}] {shown}/{total:g}"
        self._turns += 1
        return f"{SPINNER[self._turns % len(SPINNER)]} {shown}"

    def clear(self) -> None:
        """Erase the line, if one was drawn."""
        if self._drawn:
            self._stream.write(ERASE_LINE)
            self._stream.flush()
            self._drawn = False
