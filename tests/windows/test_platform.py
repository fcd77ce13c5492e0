"""The facts the Windows lane stands on: the Windows build of CPython, whose `platform` module
answers without `_wmi` (Wine 8 lacks what it calls, so the lane removes it), and a child's std
handles as pipes or DEVNULL (Wine refuses a plain Linux file as a Windows std handle)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

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
