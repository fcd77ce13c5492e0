"""The facts the Windows lane stands on: the Windows build of CPython, whose `platform` module
answers without `_wmi` (Wine 8 lacks what it calls, so the lane removes it), and a child's std
handles as pipes or DEVNULL (Wine refuses a plain Linux file as a Windows std handle)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import threading

import pytest

from hostlink.host.platform.locks import lock, unlock
from hostlink.host.platform.processes import process_alive
from hostlink.host.platform.win32 import run_hidden
from windows_support import WINDOWS_ONLY

pytestmark = WINDOWS_ONLY


def test_the_lane_is_windows_cpython():
    assert sys.platform == "win32" and os.name == "nt"
    assert sys.implementation.name == "cpython" and sys.version_info[:2] >= (3, 11)
    assert platform.system() == "Windows" and platform.machine() == "AMD64"


def test_platform_answers_without_wmi():
    """In a child: with `_wmi` present, Wine 8 aborts the whole process (no propsys VariantToString)."""
    probe = "import platform; print(platform.platform(), platform.win32_ver()[1])"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Windows-")


def test_a_child_talks_through_pipes():
    echo = "import sys; sys.stdout.write(sys.stdin.read().upper()); sys.stderr.write('done')"
    result = subprocess.run([sys.executable, "-c", echo], input="through the pipe", capture_output=True,
                            text=True, timeout=60)
    assert (result.returncode, result.stdout, result.stderr) == (0, "THROUGH THE PIPE", "done")


def test_the_seam_tells_a_running_process_from_one_that_has_ended():
    """`process_alive` through OpenProcess and GetExitCodeProcess: what the leak checks and the
    stale-lock cleanup ask about a PID."""
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        assert process_alive(os.getpid()) and process_alive(child.pid)
    finally:
        child.communicate(b"", timeout=60)
    assert not process_alive(child.pid)


def test_a_job_refuses_a_process_that_has_ended_naming_the_call():
    """The seam's Win32 errors name the call that failed, so a person can see which step of a
    child's start went wrong (Wine refuses at OpenProcess or, while the handle of the ended
    process is still held, at AssignProcessToJobObject)."""
    from hostlink.host.platform.win32 import native

    api = native()
    child = subprocess.Popen([sys.executable, "-c", "pass"], stdin=subprocess.DEVNULL)
    child.wait(timeout=60)
    job = api.create_job()
    try:
        with pytest.raises(OSError, match=r"^\[WinError \d+\] (OpenProcess|AssignProcessToJobObject) failed$"):
            api.assign(job, child.pid)
    finally:
        api.close(job)


def test_a_program_that_cannot_start_is_status_1():
    assert run_hidden([r"C:\no-such-folder\no-such-program.exe"]) == 1


def test_a_second_lock_waits_until_the_first_is_released(tmp_path):
    """`lock` on Windows polls `try_lock`: the second holder goes on only after the first lets go."""
    path = tmp_path / "edit.lock"
    first = os.open(path, os.O_RDWR | os.O_CREAT | os.O_BINARY)
    second = os.open(path, os.O_RDWR | os.O_BINARY)
    taken = threading.Event()
    try:
        lock(first)
        waiter = threading.Thread(target=lambda: (lock(second), taken.set()))
        waiter.start()
        assert not taken.wait(0.3)
        unlock(first)
        assert taken.wait(30)
        waiter.join(30)
        unlock(second)
    finally:
        os.close(first)
        os.close(second)
