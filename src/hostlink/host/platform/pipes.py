"""Reading the parent's end of an `os.pipe` without blocking the event loop.

POSIX: the read end is non-blocking and the loop waits until it is readable. Windows cannot
wait on a pipe that way (`select` takes sockets only: WinError 10038), so a worker thread
does the blocking read; and its event loop cannot read an inherited anonymous pipe (stdin
and stdout of a server a host started), which needs overlapped I/O.
"""

from __future__ import annotations

import os
import sys

import anyio

LOOP_READS_PIPES = sys.platform != "win32"  # whether the event loop can read fd 0 / write fd 1 pipes


def make_pipe() -> tuple[int, int]:
    """A new pipe (read end, write end), its read end ready for `read_pipe`."""
    read_fd, write_fd = os.pipe()
    if sys.platform != "win32":
        os.set_blocking(read_fd, False)
    return read_fd, write_fd


async def read_pipe(fd: int, size: int) -> bytes:
    """The next bytes of the pipe (b"" at its end)."""
    if sys.platform == "win32":
        return await anyio.to_thread.run_sync(os.read, fd, size, abandon_on_cancel=True)
    while True:
        await anyio.wait_readable(fd)
        try:
            return os.read(fd, size)
        except BlockingIOError:
            continue
