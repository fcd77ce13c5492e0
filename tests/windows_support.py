"""Marks and process facts of the Windows lane (tests/windows/), which scripts/test-windows runs
under the Windows build of CPython in Wine. Stdlib and pytest only: under Wine the Linux suite's
conftest is not loaded."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

WINDOWS_ONLY = pytest.mark.skipif(sys.platform != "win32", reason="Windows only: scripts/test-windows runs it")


def profile_environ(home: Path, temp: Path, claude_exe: Path) -> dict[str, str]:
    """The lane's environment as a Windows user of its own: the profile (`home`, its AppData
    folders) and the temp folder made here, a PATH that finds the lane's claude.exe and Python,
    and no Anthropic or OpenAI variable of the caller's."""
    for folder in (home / "AppData" / "Local", temp):
        folder.mkdir(parents=True)
    system32 = Path(os.environ["SYSTEMROOT"]) / "System32"
    env = {key: value for key, value in os.environ.items() if not key.startswith(("ANTHROPIC_", "OPENAI_"))}
    env.update(PATH=os.pathsep.join([str(claude_exe.parent), str(Path(sys.executable).parent), str(system32)]),
               USERPROFILE=str(home), HOME=str(home), APPDATA=str(home / "AppData" / "Roaming"),
               LOCALAPPDATA=str(home / "AppData" / "Local"), TEMP=str(temp), TMP=str(temp))
    return env


def process_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, image name) of every process (a Toolhelp32 snapshot: tests may
    enumerate; hostlink itself never ends a process found this way)."""
    import ctypes
    from ctypes import wintypes

    class Entry(ctypes.Structure):
        _fields_ = [("dwSize", wintypes.DWORD), ("cntUsage", wintypes.DWORD), ("th32ProcessID", wintypes.DWORD),
                    ("th32DefaultHeapID", ctypes.c_size_t), ("th32ModuleID", wintypes.DWORD),
                    ("cntThreads", wintypes.DWORD), ("th32ParentProcessID", wintypes.DWORD),
                    ("pcPriClassBase", wintypes.LONG), ("dwFlags", wintypes.DWORD),
                    ("szExeFile", wintypes.WCHAR * 260)]

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
    kernel32.CreateToolhelp32Snapshot.restype = wintypes.HANDLE
    kernel32.CreateToolhelp32Snapshot.argtypes = (wintypes.DWORD, wintypes.DWORD)
    kernel32.Process32FirstW.argtypes = kernel32.Process32NextW.argtypes = (wintypes.HANDLE, ctypes.c_void_p)
    kernel32.CloseHandle.argtypes = (wintypes.HANDLE,)
    snapshot = kernel32.CreateToolhelp32Snapshot(0x2, 0)  # TH32CS_SNAPPROCESS
    assert snapshot not in (None, ctypes.c_void_p(-1).value), ctypes.get_last_error()
    table = {}
    try:
        entry = Entry()
        entry.dwSize = ctypes.sizeof(entry)
        more = kernel32.Process32FirstW(snapshot, ctypes.byref(entry))
        while more:
            table[int(entry.th32ProcessID)] = (int(entry.th32ParentProcessID), entry.szExeFile.lower())
            more = kernel32.Process32NextW(snapshot, ctypes.byref(entry))
    finally:
        kernel32.CloseHandle(snapshot)
    return table


def running(pid: int) -> bool:
    """Whether `pid` has not exited (Wine's snapshot also lists an exited process, nameless,
    while a handle to it is open)."""
    import ctypes
    from ctypes import wintypes

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
    kernel32.OpenProcess.restype = wintypes.HANDLE
    kernel32.OpenProcess.argtypes = (wintypes.DWORD, wintypes.BOOL, wintypes.DWORD)
    kernel32.GetExitCodeProcess.argtypes = (wintypes.HANDLE, ctypes.POINTER(wintypes.DWORD))
    kernel32.CloseHandle.argtypes = (wintypes.HANDLE,)
    handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
    if not handle:
        return False
    try:
        code = wintypes.DWORD()
        return bool(kernel32.GetExitCodeProcess(handle, ctypes.byref(code))) and code.value == 259  # STILL_ACTIVE
    finally:
        kernel32.CloseHandle(handle)


# Wine's own service processes: started by wineboot, whose PID Wine may hand on to a process below
# the root, so that a parent link makes them look like its descendants (seen once in CI).
WINE_SERVICES = frozenset({"services.exe", "winedevice.exe", "plugplay.exe", "svchost.exe", "rpcss.exe",
                           "explorer.exe", "wineboot.exe"})


def descendants(root: int, table: dict[int, tuple[int, str]] | None = None) -> dict[int, str]:
    """pid -> image name of every running process below `root` (by parent links in one snapshot),
    Wine's own services left out."""
    table = process_table() if table is None else table
    found: dict[int, str] = {}
    grew = True
    while grew:
        grew = False
        for pid, (parent, name) in table.items():
            if pid not in found and pid != root and (parent == root or parent in found) and name not in WINE_SERVICES:
                found[pid] = name
                grew = True
    return {pid: name for pid, name in found.items() if running(pid)}


def end_leftovers(pids) -> None:
    """End what a failed test left running (TerminateProcess through `os.kill`), so that it
    cannot hold the lane's output pipe open: the test stops every process it started."""
    import os
    import signal

    for pid in pids:
        if running(pid):
            try:
                os.kill(pid, signal.SIGTERM)
            except OSError:
                pass


def wait_until(condition, timeout: float, what: str, step: float = 0.2):
    """Poll `condition` until it returns something true; fail naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"{what} (after {timeout} s)"
        time.sleep(step)
