"""The README's first command, `hostlink demo`, on Windows: the embedded demo server over stdio,
its tools listed through the `mcp` tool, one called."""

from __future__ import annotations

import subprocess
import sys

from windows_support import WINDOWS_ONLY

pytestmark = WINDOWS_ONLY


def test_demo(tmp_path):
    result = subprocess.run([sys.executable, "-c", "from hostlink.cli import main; main()", "demo"],
                            capture_output=True, text=True, cwd=tmp_path, stdin=subprocess.DEVNULL, timeout=180)
    assert "Traceback" not in result.stdout + result.stderr, result.stderr[-3000:]
    assert result.returncode == 0, result.stderr[-3000:]
    assert "server 'demo' tool 'echo'" in result.stdout
    assert result.stdout.rstrip().endswith("hello from hostlink")
