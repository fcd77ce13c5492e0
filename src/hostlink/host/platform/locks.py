"""The exclusive lock of an open lock file, never stolen by age.

POSIX: `fcntl.flock` (released when the descriptor closes, so a process that dies releases
it); a directory can be locked itself, leaving no file behind. Windows: `msvcrt.locking` of
one byte far past the data (the PID and time the holder writes stay readable), also released
by the system when the process ends; a directory cannot be opened there, so its lock is a
file in hostlink's state folder named by a hash of the directory's path.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from pathlib import Path

from hostlink.host.platform.folders import state_home

_WINDOWS_LOCK_OFFSET = 1 << 30  # past anything a lock file holds; locking beyond the end is allowed


def try_lock(fd: int) -> bool:
    """Take the exclusive lock of `fd` if free; False when another holds it."""
    if sys.platform == "win32":
        import msvcrt

        os.lseek(fd, _WINDOWS_LOCK_OFFSET, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def unlock(fd: int) -> None:
    """Release the lock `try_lock` took."""
    if sys.platform == "win32":
        import msvcrt

        os.lseek(fd, _WINDOWS_LOCK_OFFSET, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
    else:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_UN)


def lock(fd: int) -> None:
    """Wait for the exclusive lock of `fd` (blocking the thread)."""
    if sys.platform == "win32":
        while not try_lock(fd):
            time.sleep(0.05)
        return
    import fcntl

    fcntl.flock(fd, fcntl.LOCK_EX)


def open_directory_lock(directory: Path) -> int:
    """A descriptor whose lock stands for `directory` (see the module docstring)."""
    if sys.platform == "win32":
        locks = state_home(os.environ) / "hostlink" / "locks"
        locks.mkdir(parents=True, exist_ok=True)
        name = hashlib.sha256(os.path.normcase(str(directory)).encode()).hexdigest()[:32]
        return os.open(locks / f"edit-{name}.lock", os.O_RDWR | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o600)
    return os.open(directory, os.O_RDONLY)
