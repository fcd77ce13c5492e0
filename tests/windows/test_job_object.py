"""Job Objects as the lane's Wine runs them: a job with kill-on-close ends every process in it,
a grandchild too, when its last handle closes — what the seam relies on so that a host killed hard
leaves no `claude.exe` behind. Driven through ctypes, the same calls the seam makes."""

from __future__ import annotations

import ctypes
import subprocess
import sys
from ctypes import wintypes

import pytest

from windows_support import WINDOWS_ONLY

pytestmark = WINDOWS_ONLY

JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE = 0x2000
JOB_OBJECT_EXTENDED_LIMIT_INFORMATION_CLASS = 9
SYNCHRONIZE, PROCESS_TERMINATE = 0x00100000, 0x0001
CREATE_SUSPENDED, CREATE_NO_WINDOW = 0x4, 0x08000000
TH32CS_SNAPTHREAD, THREAD_SUSPEND_RESUME = 0x4, 0x0002
WAIT_OBJECT_0, WAIT_TIMEOUT = 0, 0x102

# The child starts a grandchild only when told, so that it is in the job first; then it prints the
# grandchild's PID and waits.
CHILD = """
import subprocess, sys, time
sys.stdin.readline()
grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], stdin=subprocess.DEVNULL)
print(grandchild.pid, flush=True)
time.sleep(120)
"""


class _BasicLimits(ctypes.Structure):
    _fields_ = [("PerProcessUserTimeLimit", ctypes.c_int64), ("PerJobUserTimeLimit", ctypes.c_int64),
                ("LimitFlags", wintypes.DWORD), ("MinimumWorkingSetSize", ctypes.c_size_t),
                ("MaximumWorkingSetSize", ctypes.c_size_t), ("ActiveProcessLimit", wintypes.DWORD),
                ("Affinity", ctypes.c_size_t), ("PriorityClass", wintypes.DWORD), ("SchedulingClass", wintypes.DWORD)]


class _IoCounters(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in ("Read", "Write", "Other", "ReadBytes", "WriteBytes", "OtherBytes")]


class _ExtendedLimits(ctypes.Structure):
    _fields_ = [("BasicLimitInformation", _BasicLimits), ("IoInfo", _IoCounters),
                ("ProcessMemoryLimit", ctypes.c_size_t), ("JobMemoryLimit", ctypes.c_size_t),
                ("PeakProcessMemoryUsed", ctypes.c_size_t), ("PeakJobMemoryUsed", ctypes.c_size_t)]


class _ThreadEntry(ctypes.Structure):
    _fields_ = [("dwSize", wintypes.DWORD), ("cntUsage", wintypes.DWORD), ("th32ThreadID", wintypes.DWORD),
                ("th32OwnerProcessID", wintypes.DWORD), ("tpBasePri", wintypes.LONG), ("tpDeltaPri", wintypes.LONG),
                ("dwFlags", wintypes.DWORD)]


@pytest.fixture
def kernel32():
    dll = ctypes.WinDLL("kernel32", use_last_error=True)
    dll.CreateJobObjectW.restype = wintypes.HANDLE
    dll.CreateJobObjectW.argtypes = [ctypes.c_void_p, wintypes.LPCWSTR]
    dll.SetInformationJobObject.argtypes = [wintypes.HANDLE, ctypes.c_int, ctypes.c_void_p, wintypes.DWORD]
    dll.AssignProcessToJobObject.argtypes = [wintypes.HANDLE, wintypes.HANDLE]
    dll.OpenProcess.restype = wintypes.HANDLE
    dll.OpenProcess.argtypes = [wintypes.DWORD, wintypes.BOOL, wintypes.DWORD]
    dll.WaitForSingleObject.argtypes = [wintypes.HANDLE, wintypes.DWORD]
    dll.WaitForSingleObject.restype = wintypes.DWORD
    dll.CloseHandle.argtypes = [wintypes.HANDLE]
    dll.TerminateProcess.argtypes = [wintypes.HANDLE, wintypes.UINT]
    dll.CreateToolhelp32Snapshot.restype = wintypes.HANDLE
    dll.CreateToolhelp32Snapshot.argtypes = [wintypes.DWORD, wintypes.DWORD]
    dll.Thread32First.argtypes = dll.Thread32Next.argtypes = [wintypes.HANDLE, ctypes.c_void_p]
    dll.OpenThread.restype = wintypes.HANDLE
    dll.OpenThread.argtypes = [wintypes.DWORD, wintypes.BOOL, wintypes.DWORD]
    dll.ResumeThread.argtypes = [wintypes.HANDLE]
    dll.ResumeThread.restype = wintypes.DWORD
    return dll


def _job(kernel32, kill_on_close: bool) -> int:
    job = kernel32.CreateJobObjectW(None, None)
    assert job, ctypes.WinError(ctypes.get_last_error())
    limits = _ExtendedLimits()
    limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE if kill_on_close else 0
    assert kernel32.SetInformationJobObject(job, JOB_OBJECT_EXTENDED_LIMIT_INFORMATION_CLASS,
                                            ctypes.byref(limits), ctypes.sizeof(limits))
    return job


def _tree_in_job(kernel32, job: int, child: subprocess.Popen) -> int:
    """Put the child in the job, let it start its grandchild; a handle on the grandchild."""
    assert kernel32.AssignProcessToJobObject(job, int(child._handle)), ctypes.WinError(ctypes.get_last_error())
    child.stdin.write("go\n")
    child.stdin.flush()
    grandchild = kernel32.OpenProcess(SYNCHRONIZE | PROCESS_TERMINATE, False, int(child.stdout.readline()))
    assert grandchild, ctypes.WinError(ctypes.get_last_error())
    return grandchild


@pytest.mark.parametrize("kill_on_close", [True, False])
def test_closing_the_job_ends_the_grandchild(kernel32, kill_on_close):
    """With kill-on-close the whole tree ends at the close; without it (the control) it lives on."""
    job = _job(kernel32, kill_on_close)
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    grandchild = None
    try:
        grandchild = _tree_in_job(kernel32, job, child)
        kernel32.CloseHandle(job)
        job = None
        outcome = kernel32.WaitForSingleObject(grandchild, 10_000 if kill_on_close else 2_000)
        assert outcome == (WAIT_OBJECT_0 if kill_on_close else WAIT_TIMEOUT)
        if kill_on_close:
            child.wait(timeout=10)
    finally:
        if job:
            kernel32.CloseHandle(job)
        if grandchild and kernel32.WaitForSingleObject(grandchild, 0) == WAIT_TIMEOUT:
            kernel32.TerminateProcess(grandchild, 1)
            kernel32.WaitForSingleObject(grandchild, 10_000)
        if grandchild:
            kernel32.CloseHandle(grandchild)
        if child.poll() is None:
            child.kill()
        child.wait()
        child.stdin.close()
        child.stdout.close()


def _threads_of(kernel32, pid: int) -> list[int]:
    snapshot = kernel32.CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0)
    entry = _ThreadEntry(dwSize=ctypes.sizeof(_ThreadEntry))
    found = []
    try:
        more = kernel32.Thread32First(snapshot, ctypes.byref(entry))
        while more:
            if entry.th32OwnerProcessID == pid:
                found.append(entry.th32ThreadID)
            more = kernel32.Thread32Next(snapshot, ctypes.byref(entry))
    finally:
        kernel32.CloseHandle(snapshot)
    return found


def test_a_child_started_suspended_is_in_the_job_before_it_runs(kernel32):
    """The seam's start: suspended and windowless, put in the job, then its thread resumed — so the
    child's first instruction already runs inside the job (it reports IsProcessInJob itself)."""
    probe = ("import ctypes; from ctypes import wintypes; inside = wintypes.BOOL()\n"  # HANDLE(-1): this process
             "ctypes.windll.kernel32.IsProcessInJob(wintypes.HANDLE(-1), None, ctypes.byref(inside))\n"
             "print(bool(inside.value))")
    job = _job(kernel32, kill_on_close=True)
    child = subprocess.Popen([sys.executable, "-c", probe], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             text=True, creationflags=CREATE_SUSPENDED | CREATE_NO_WINDOW)
    try:
        assert child.poll() is None
        assert kernel32.AssignProcessToJobObject(job, int(child._handle)), ctypes.WinError(ctypes.get_last_error())
        threads = _threads_of(kernel32, child.pid)
        assert len(threads) == 1
        thread = kernel32.OpenThread(THREAD_SUSPEND_RESUME, False, threads[0])
        assert thread, ctypes.WinError(ctypes.get_last_error())
        try:
            assert kernel32.ResumeThread(thread) == 1  # it was suspended once: now it runs
        finally:
            kernel32.CloseHandle(thread)
        output, _ = child.communicate(timeout=60)
        assert (child.returncode, output.strip()) == (0, "True")
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()
        child.stdout.close()
        kernel32.CloseHandle(job)
