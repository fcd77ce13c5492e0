"""The Win32 calls behind a child's Job Object, through ctypes; only Windows has them.

`Win32` is what `processes` needs; `native()` is the real one on Windows, and tests on
other systems drive the Windows branch through a stand-in with the same methods.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from typing import Protocol

CREATE_SUSPENDED = 0x00000004
CREATE_NO_WINDOW = 0x08000000
TASKKILL_SECONDS = 10.0


class Win32(Protocol):
    """The calls a Windows child tree needs; handles are plain integers."""

    def create_job(self) -> int:
        """A new Job Object that ends every process in it when its last handle closes."""

    def assign(self, job: int, pid: int) -> None:
        """Put the (suspended) process `pid` into `job`."""

    def resume(self, pid: int) -> None:
        """Let the suspended main thread of `pid` run."""

    def active_processes(self, job: int) -> int:
        """How many processes of `job` still run."""

    def terminate_job(self, job: int) -> None:
        """End every process in `job`."""

    def close(self, handle: int) -> None:
        """Close a handle (the job's last one ends what is left in it)."""

    def run(self, argv: Sequence[str]) -> int:
        """Run a system tool (taskkill) hidden and wait; its exit status."""

    def alive(self, pid: int) -> bool:
        """Whether process `pid` exists and has not exited."""


def run_hidden(argv: Sequence[str]) -> int:
    """`argv` without a console window, its output discarded; 1 when it cannot run."""
    try:
        return subprocess.run(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, creationflags=CREATE_NO_WINDOW,
                              timeout=TASKKILL_SECONDS, check=False).returncode
    except (OSError, subprocess.SubprocessError):
        return 1


if sys.platform == "win32":
    import ctypes
    from ctypes import wintypes

    _JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE = 0x00002000
    _JOB_OBJECT_EXTENDED_LIMIT_INFORMATION = 9
    _JOB_OBJECT_BASIC_ACCOUNTING_INFORMATION = 1
    _PROCESS_SET_QUOTA, _PROCESS_TERMINATE = 0x0100, 0x0001
    _PROCESS_QUERY_LIMITED_INFORMATION = 0x1000
    _THREAD_SUSPEND_RESUME = 0x0002
    _TH32CS_SNAPTHREAD = 0x00000004
    _STILL_ACTIVE = 259
    _INVALID_HANDLE = ctypes.c_void_p(-1).value

    class _IoCounters(ctypes.Structure):
        _fields_ = [(name, ctypes.c_ulonglong) for name in (
            "ReadOperationCount", "WriteOperationCount", "OtherOperationCount",
            "ReadTransferCount", "WriteTransferCount", "OtherTransferCount")]

    class _BasicLimits(ctypes.Structure):
        _fields_ = [("PerProcessUserTimeLimit", ctypes.c_longlong), ("PerJobUserTimeLimit", ctypes.c_longlong),
                    ("LimitFlags", wintypes.DWORD), ("MinimumWorkingSetSize", ctypes.c_size_t),
                    ("MaximumWorkingSetSize", ctypes.c_size_t), ("ActiveProcessLimit", wintypes.DWORD),
                    ("Affinity", ctypes.c_size_t), ("PriorityClass", wintypes.DWORD),
                    ("SchedulingClass", wintypes.DWORD)]

    class _ExtendedLimits(ctypes.Structure):
        _fields_ = [("BasicLimitInformation", _BasicLimits), ("IoInfo", _IoCounters),
                    ("ProcessMemoryLimit", ctypes.c_size_t), ("JobMemoryLimit", ctypes.c_size_t),
                    ("PeakProcessMemoryUsed", ctypes.c_size_t), ("PeakJobMemoryUsed", ctypes.c_size_t)]

    class _Accounting(ctypes.Structure):
        _fields_ = [("TotalUserTime", ctypes.c_longlong), ("TotalKernelTime", ctypes.c_longlong),
                    ("ThisPeriodTotalUserTime", ctypes.c_longlong), ("ThisPeriodTotalKernelTime", ctypes.c_longlong),
                    ("TotalPageFaultCount", wintypes.DWORD), ("TotalProcesses", wintypes.DWORD),
                    ("ActiveProcesses", wintypes.DWORD), ("TotalTerminatedProcesses", wintypes.DWORD)]

    class _ThreadEntry(ctypes.Structure):
        _fields_ = [("dwSize", wintypes.DWORD), ("cntUsage", wintypes.DWORD), ("th32ThreadID", wintypes.DWORD),
                    ("th32OwnerProcessID", wintypes.DWORD), ("tpBasePri", wintypes.LONG),
                    ("tpDeltaPri", wintypes.LONG), ("dwFlags", wintypes.DWORD)]

    _kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    _kernel32.CreateJobObjectW.restype = wintypes.HANDLE
    _kernel32.CreateJobObjectW.argtypes = (ctypes.c_void_p, wintypes.LPCWSTR)
    _kernel32.OpenProcess.restype = wintypes.HANDLE
    _kernel32.OpenProcess.argtypes = (wintypes.DWORD, wintypes.BOOL, wintypes.DWORD)
    _kernel32.OpenThread.restype = wintypes.HANDLE
    _kernel32.OpenThread.argtypes = (wintypes.DWORD, wintypes.BOOL, wintypes.DWORD)
    _kernel32.CreateToolhelp32Snapshot.restype = wintypes.HANDLE
    _kernel32.CreateToolhelp32Snapshot.argtypes = (wintypes.DWORD, wintypes.DWORD)
    for _name in ("SetInformationJobObject", "QueryInformationJobObject"):
        getattr(_kernel32, _name).argtypes = (wintypes.HANDLE, ctypes.c_int, ctypes.c_void_p, wintypes.DWORD) + (
            (ctypes.c_void_p,) if _name.startswith("Query") else ())
    _kernel32.AssignProcessToJobObject.argtypes = (wintypes.HANDLE, wintypes.HANDLE)
    _kernel32.TerminateJobObject.argtypes = (wintypes.HANDLE, wintypes.UINT)
    _kernel32.CloseHandle.argtypes = (wintypes.HANDLE,)
    _kernel32.ResumeThread.restype = wintypes.DWORD
    _kernel32.ResumeThread.argtypes = (wintypes.HANDLE,)
    _kernel32.Thread32First.argtypes = (wintypes.HANDLE, ctypes.c_void_p)
    _kernel32.Thread32Next.argtypes = (wintypes.HANDLE, ctypes.c_void_p)
    _kernel32.GetExitCodeProcess.argtypes = (wintypes.HANDLE, ctypes.POINTER(wintypes.DWORD))

    def _check(ok: object, what: str) -> None:
        if not ok:
            raise ctypes.WinError(ctypes.get_last_error(), f"{what} failed")

    class _Native:
        def create_job(self) -> int:
            job = _kernel32.CreateJobObjectW(None, None)
            _check(job, "CreateJobObject")
            limits = _ExtendedLimits()
            limits.BasicLimitInformation.LimitFlags = _JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
            if not _kernel32.SetInformationJobObject(job, _JOB_OBJECT_EXTENDED_LIMIT_INFORMATION,
                                                     ctypes.byref(limits), ctypes.sizeof(limits)):
                error = ctypes.get_last_error()
                _kernel32.CloseHandle(job)
                raise ctypes.WinError(error, "SetInformationJobObject failed")
            return int(job)

        def assign(self, job: int, pid: int) -> None:
            process = _kernel32.OpenProcess(_PROCESS_SET_QUOTA | _PROCESS_TERMINATE, False, pid)
            _check(process, "OpenProcess")
            try:
                _check(_kernel32.AssignProcessToJobObject(job, process), "AssignProcessToJobObject")
            finally:
                _kernel32.CloseHandle(process)

        def resume(self, pid: int) -> None:
            # The child's own threads, found by its retained PID: a process created suspended
            # has exactly one, its main thread.
            snapshot = _kernel32.CreateToolhelp32Snapshot(_TH32CS_SNAPTHREAD, 0)
            if snapshot in (None, _INVALID_HANDLE):
                raise ctypes.WinError(ctypes.get_last_error(), "CreateToolhelp32Snapshot failed")
            resumed = 0
            try:
                entry = _ThreadEntry()
                entry.dwSize = ctypes.sizeof(entry)
                more = _kernel32.Thread32First(snapshot, ctypes.byref(entry))
                while more:
                    if entry.th32OwnerProcessID == pid:
                        thread = _kernel32.OpenThread(_THREAD_SUSPEND_RESUME, False, entry.th32ThreadID)
                        _check(thread, "OpenThread")
                        try:
                            _check(_kernel32.ResumeThread(thread) != 0xFFFFFFFF, "ResumeThread")
                            resumed += 1
                        finally:
                            _kernel32.CloseHandle(thread)
                    more = _kernel32.Thread32Next(snapshot, ctypes.byref(entry))
            finally:
                _kernel32.CloseHandle(snapshot)
            if not resumed:
                raise OSError("the suspended child has no thread to resume")

        def active_processes(self, job: int) -> int:
            info = _Accounting()
            _check(_kernel32.QueryInformationJobObject(job, _JOB_OBJECT_BASIC_ACCOUNTING_INFORMATION,
                                                       ctypes.byref(info), ctypes.sizeof(info), None),
                   "QueryInformationJobObject")
            return int(info.ActiveProcesses)

        def terminate_job(self, job: int) -> None:
            _kernel32.TerminateJobObject(job, 1)

        def close(self, handle: int) -> None:
            _kernel32.CloseHandle(handle)

        def run(self, argv: Sequence[str]) -> int:
            return run_hidden(argv)

        def alive(self, pid: int) -> bool:
            process = _kernel32.OpenProcess(_PROCESS_QUERY_LIMITED_INFORMATION, False, pid)
            if not process:
                return ctypes.get_last_error() == 5  # access denied: it exists, owned by another user
            try:
                code = wintypes.DWORD()
                return bool(_kernel32.GetExitCodeProcess(process, ctypes.byref(code))) and code.value == _STILL_ACTIVE
            finally:
                _kernel32.CloseHandle(process)

    def native() -> Win32:
        """The real Win32 calls."""
        return _Native()
