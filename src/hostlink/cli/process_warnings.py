"""Warnings in the processes hostlink's terminal hosts run in, shown as one sanitized line.

Python shows a warning with the file it came from and that file's source line, so a
dependency's deprecation notice put an install path and a line of code on the gateway's
stderr. The `hostlink` command (the CLI, `hostlink serve`, `hostlink mcp serve`) owns its
process and shows each warning as one line instead: its category and message, sanitized,
never a path. Which warnings are shown is still Python's filters' choice (the test suite
makes them errors).
"""

from __future__ import annotations

import sys
import warnings
from typing import Any, TextIO

MESSAGE_CHARS = 300


def show_warnings_as_one_line() -> None:
    warnings.showwarning = _one_line


def _one_line(message: Warning | str, category: type[Warning], filename: str, lineno: int,
              file: TextIO | None = None, line: str | None = None, *args: Any) -> None:
    from hostlink.host.output import one_line  # at the first warning: the llm plugin loads hostlink.cli

    try:
        (file or sys.stderr).write(f"hostlink: {category.__name__}: {one_line(str(message), MESSAGE_CHARS)}\n")
    except (OSError, ValueError):
        pass  # stderr is closed: nothing to tell
