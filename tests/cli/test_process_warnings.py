"""A warning in a process the `hostlink` command owns is one sanitized line on stderr: its
category and message, never the file it came from or that file's source line."""

from __future__ import annotations

import subprocess
import sys

# The entry point runs (`--version` ends it), then a dependency warns, as the SDK did at a roots request.
_WARNS = """
import sys, warnings
sys.argv = ["hostlink", "--version"]
from hostlink.cli import main
try:
    main()
except SystemExit:
    pass
warnings.warn_explicit("The roots capability is deprecated \\x1b[31mnow\\x1b[0m", DeprecationWarning,
                       "/home/you/site-packages/mcp/server/session.py", 316)
"""


def test_a_warning_is_one_line_without_a_path():
    done = subprocess.run([sys.executable, "-W", "default", "-c", _WARNS], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr == b"hostlink: DeprecationWarning: The roots capability is deprecated now\n"
