"""Marks of the Windows lane (tests/windows/), which scripts/test-windows runs under the Windows
build of CPython in Wine. Stdlib and pytest only: under Wine the Linux suite's conftest is not loaded."""

from __future__ import annotations

import sys

import pytest

WINDOWS_ONLY = pytest.mark.skipif(sys.platform != "win32", reason="Windows only: scripts/test-windows runs it")
