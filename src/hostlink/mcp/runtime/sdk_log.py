"""What the MCP SDK logs reaches the terminal as a few bounded, sanitized lines.

Left alone, the SDK's warnings and errors go to Python's last-resort handler with their
tracebacks: one malformed line from a server becomes a traceback quoting it, and 100k of
them become megabytes of stderr. hostlink takes over the `mcp` loggers once: a record of
warning level or above prints as one line without traceback, each kind of event (logger and
message template) once, and at most `MAX_LINES` lines per process.
"""

from __future__ import annotations

import logging
import sys

from hostlink.host.output import one_line

MAX_LINES = 20
LINE_CHARS = 200


class _OneLinePerKind(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self._seen: set[tuple[str, str]] = set()

    def emit(self, record: logging.LogRecord) -> None:
        kind = (record.name, str(record.msg)[:80])
        if kind in self._seen or len(self._seen) > MAX_LINES:
            return
        self._seen.add(kind)
        if len(self._seen) > MAX_LINES:
            line = "further MCP SDK messages are not shown"
        else:
            try:
                line = one_line(record.getMessage(), LINE_CHARS)
            except Exception:  # noqa: BLE001 - a record whose arguments do not format
                line = one_line(str(record.msg), LINE_CHARS)
        try:
            sys.stderr.write(f"hostlink: MCP SDK {record.levelname.lower()}: {line}\n")
        except (OSError, ValueError):
            pass  # stderr is closed: nothing to tell


def take_over_sdk_logging() -> None:
    """Route the `mcp` loggers through the bounded handler (idempotent)."""
    logger = logging.getLogger("mcp")
    if not any(isinstance(handler, _OneLinePerKind) for handler in logger.handlers):
        logger.addHandler(_OneLinePerKind())
        logger.propagate = False
