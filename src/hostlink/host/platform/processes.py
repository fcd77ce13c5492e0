r"""A child in a tree of its own, and the end of exactly that tree.

POSIX: the child leads a new process group (`start_new_session`); a stop signals that group
(SIGTERM, SIGKILL when forced). Windows: the child is hidden (`CREATE_NO_WINDOW`) and not
detached. It is created suspended, put into a Job Object with kill-on-close, and only then
resumed, so it and everything it starts are in the job before it runs an instruction (a job
given to a running child could miss what it started first). A stop is the seed's forced
cleanup, `%SystemRoot%\System32\taskkill.exe /PID <pid> /T /F` with the retained child's PID,
then the job ends what taskkill cannot reach (descendants whose root has exited); a host that
dies hard closes the job's last handle, which ends the tree. Windows has no gentle stop for
a child without a console, so every stop there is forced. Nothing is ever ended by image
name or by enumerating processes.
"""

from __future__ import annotations

import ntpath
import os
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import IO, Any, Protocol

import anyio
import anyio.lowlevel
from anyio.abc import Process

from hostlink.host.platform.commands import Command
from hostlink.host.platform.win32 import CREATE_NO_WINDOW, CREATE_SUSPENDED, Win32

Launch = Callable[..., Awaitable[Process]]
Stderr = int | IO[Any] | None


class ChildTree(Protocol):
    """A started child and everything it starts."""

    pid: int

    def stop(self, *, forced: bool) -> bool:
        """Stop the tree; False when nothing of it was left to stop."""

    def alive(self) -> bool:
        """Whether any process of the tree still runs."""

    def close(self) -> None:
        """Release what holds the tree (Windows: the job's handle, which ends what is left)."""


def _group_alive(pgid: int) -> bool:
    """Whether a live (non-zombie) process is in group `pgid`. On Linux this reads the process
    table, because a signal to a zombie succeeds: a finished member whose parent has not
    reaped it yet is not alive."""
    if sys.platform == "win32":
        raise NotImplementedError("Windows trees are jobs")
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False  # not even an unreaped member: the usual answer once a tree is stopped, and cheap
    except PermissionError:
        pass  # a member we may not signal is still a member
    if not os.path.isdir("/proc/self"):
        return True
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if fields[2] == str(pgid).encode() and fields[0] not in (b"Z", b"X"):
            return True
    return False


class PosixTree:
    """A process group led by the child."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def stop(self, *, forced: bool) -> bool:
        if sys.platform == "win32":
            raise NotImplementedError("Windows trees are jobs")
        try:
            os.killpg(self.pid, signal.SIGKILL if forced else signal.SIGTERM)
        except ProcessLookupError:
            return False
        return True

    def alive(self) -> bool:
        return _group_alive(self.pid)

    def close(self) -> None:
        pass


def taskkill_argv(pid: int, environ: Mapping[str, str]) -> list[str] | None:
    r"""The seed's forced cleanup of the retained child `pid`: `%SystemRoot%\System32\taskkill.exe
    /PID <pid> /T /F`; None without `SystemRoot` (the job still ends the tree)."""
    root = environ.get("SystemRoot") or environ.get("SYSTEMROOT")
    if not root:
        return None
    return [ntpath.join(root, "System32", "taskkill.exe"), "/PID", str(pid), "/T", "/F"]


class WindowsTree:
    """The retained child and its Job Object."""

    def __init__(self, api: Win32, job: int, pid: int, running: Callable[[], bool],
                 environ: Mapping[str, str]) -> None:
        self.pid = pid
        self._api, self._job, self._running, self._environ = api, job, running, environ
        self._closed = False

    def stop(self, *, forced: bool) -> bool:
        if not self.alive():
            return False
        argv = taskkill_argv(self.pid, self._environ)
        if argv is not None and self._running():  # only while we hold the child: its PID is ours
            self._api.run(argv)
        self._api.terminate_job(self._job)
        return True

    def alive(self) -> bool:
        return not self._closed and self._api.active_processes(self._job) > 0

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._api.close(self._job)


# What a Windows program needs of its parent's environment to run (the system's folders, how
# commands resolve) and to find its user's profile, settings and temp folder.
_WINDOWS_VARIABLES = ("SystemRoot", "SystemDrive", "windir", "ComSpec", "PATHEXT", "USERPROFILE", "USERNAME",
                      "HOMEDRIVE", "HOMEPATH", "APPDATA", "LOCALAPPDATA", "ProgramData", "TEMP", "TMP")


def system_variables() -> tuple[str, ...]:
    """The names a child takes from its parent's environment on this system besides the
    portable ones (HOME, PATH, …): none on POSIX, the Windows ones above on Windows."""
    return _WINDOWS_VARIABLES if sys.platform == "win32" else ()


def _args(argv: Command) -> Command:
    return argv if isinstance(argv, str) else list(argv)


async def start_posix(argv: Command, launch: Launch, **options: Any) -> tuple[Process, ChildTree]:
    process = await launch(_args(argv), start_new_session=True, **options)
    return process, PosixTree(process.pid)


async def start_windows(argv: Command, launch: Launch, api: Win32, environ: Mapping[str, str],
                        **options: Any) -> tuple[Process, ChildTree]:
    """Job first, then the child suspended, into the job, then resumed; a failure on the way
    ends the child before it ran anything."""
    job = api.create_job()
    try:
        process = await launch(_args(argv), creationflags=CREATE_NO_WINDOW | CREATE_SUSPENDED, **options)
    except BaseException:
        api.close(job)
        raise
    try:
        api.assign(job, process.pid)
        api.resume(process.pid)
    except BaseException:
        api.terminate_job(job)
        api.close(job)
        process.kill()  # suspended and outside the job when assign failed: its own handle ends it
        with anyio.CancelScope(shield=True):
            await process.wait()
        raise
    return process, WindowsTree(api, job, process.pid, lambda: process.returncode is None, environ)


async def start_child(argv: Command, *, env: Mapping[str, str], cwd: str | os.PathLike[str] | None,
                      stderr: Stderr, launch: Launch = anyio.open_process) -> tuple[Process, ChildTree]:
    """Start `argv` (a str: one cmd.exe line, see `commands`) with piped stdin/stdout in a tree
    of its own; a caller already cancelled starts nothing."""
    await anyio.lowlevel.checkpoint_if_cancelled()
    options: dict[str, Any] = {"env": dict(env), "cwd": cwd, "stdin": subprocess.PIPE,
                               "stdout": subprocess.PIPE, "stderr": stderr}
    if sys.platform == "win32":
        from hostlink.host.platform.win32 import native

        return await start_windows(argv, launch, native(), os.environ, **options)
    return await start_posix(argv, launch, **options)


if sys.platform == "win32":
    # taskkill /F and TerminateJobObject end the child with status 1 (Wine reports 0); no signal
    # is involved, so the child cannot answer a stop with a status of its own.
    STOPPED_STATUSES: frozenset[int] = frozenset({0, 1})
    KILLED_STATUS = 1
else:
    STOPPED_STATUSES = frozenset({-signal.SIGTERM})
    KILLED_STATUS = -signal.SIGKILL


def end_process(pid: int, *, forced: bool) -> None:
    """Signal one process found in a POSIX tree walk (SIGTERM, SIGKILL when forced); gone or
    not ours is fine. Windows trees end through their job, never by a PID found this way."""
    if sys.platform != "win32":
        try:
            os.kill(pid, signal.SIGKILL if forced else signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass


def process_alive(pid: int) -> bool:
    """Whether process `pid` exists (also one of another user's)."""
    if sys.platform == "win32":
        from hostlink.host.platform.win32 import native

        return native().alive(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
