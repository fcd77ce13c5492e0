"""A child process a test starts, as a context: however the test ends, the child is stopped
and its pipes are closed (an open pipe is a ResourceWarning in whichever later test the
garbage collector happens to run)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def started(argv: list[str], **popen: Any) -> Iterator[subprocess.Popen]:
    """`subprocess.Popen(argv, **popen)`, killed on the way out if the test left it running.
    Unlike Popen's own `with`, the exit never waits on a child that is still running."""
    process = subprocess.Popen(argv, **popen)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        for pipe in (process.stdin, process.stdout, process.stderr):
            if pipe is not None:
                try:
                    pipe.close()
                except OSError:
                    pass  # stdin's unsent bytes: the child is gone
