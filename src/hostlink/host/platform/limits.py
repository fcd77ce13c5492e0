"""How many descriptors this process may hold open.

POSIX: the soft `RLIMIT_NOFILE` (`ulimit -n`). Windows has no such limit for sockets and
pipes (they are handles, bounded by memory); the C runtime documents 8,192 as the most
files it keeps open at once, so that is the bound a host plans with there.
"""

from __future__ import annotations

import sys

WINDOWS_CRT_FILES = 8192


def descriptor_limit() -> int | None:
    """The soft limit on open descriptors; None when unlimited."""
    if sys.platform == "win32":
        return WINDOWS_CRT_FILES
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else soft
