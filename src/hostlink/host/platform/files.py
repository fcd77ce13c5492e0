"""Private files: what `os.open` may promise, and who owns a file.

POSIX: 0700 directories and 0600 files, opened without following a symlink, checked to
belong to this user (`os.getuid`), and abandoned private directories are recovered.
Windows has no owner uid, no `O_NOFOLLOW` and no mode bits that protect a file: private
state relies on the per-user temporary root's ACL (only the user and the system can open
it), and there is no automatic stale recovery, since no ownership check can tell our
leftovers from another's.
"""

from __future__ import annotations

import os
import stat
import sys

NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
CLOEXEC: int = getattr(os, "O_CLOEXEC", 0)
NONBLOCK: int = getattr(os, "O_NONBLOCK", 0)
BINARY: int = getattr(os, "O_BINARY", 0)  # Windows: no newline translation
STALE_RECOVERY = sys.platform != "win32"


def make_blocking(fd: int) -> None:
    """Undo `NONBLOCK` (opened so, a FIFO does not hang the open; written so, it waits)."""
    if sys.platform != "win32":
        os.set_blocking(fd, True)


def owned_by_user(info: os.stat_result) -> bool:
    """Whether `info` (of `os.stat`/`lstat`) is this user's; on Windows the ACL of the
    per-user root says so, so every file under it is."""
    if sys.platform == "win32":
        return True
    return info.st_uid == os.getuid()


def private_mode(info: os.stat_result) -> bool:
    """Whether `info`'s mode gives nothing to group or others; on Windows the mode bits say
    nothing of who may open a file (the ACL does), so it is always so."""
    if sys.platform == "win32":
        return True
    return not stat.S_IMODE(info.st_mode) & 0o077


def runtime_dir_name(package: str) -> str:
    """The private root's name under the temp directory: `<package>-<uid>` where /tmp is
    shared; on Windows the temp directory is the user's own."""
    if sys.platform == "win32":
        return package
    return f"{package}-{os.getuid()}"


def read_at(fd: int, size: int, offset: int) -> bytes:
    """Up to `size` bytes at `offset`, without moving the file position where the system can."""
    if sys.platform == "win32":
        os.lseek(fd, offset, os.SEEK_SET)
        return os.read(fd, size)
    return os.pread(fd, size, offset)


def write_at(fd: int, data: bytes, offset: int) -> None:
    """Write `data` at `offset`."""
    if sys.platform == "win32":
        os.lseek(fd, offset, os.SEEK_SET)
        os.write(fd, data)
    else:
        os.pwrite(fd, data, offset)
