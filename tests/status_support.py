"""The status page in the real Chromium that scripts/setup-test installs, driven by Playwright
(`playwright-core`, installed with `@playwright/mcp`) from tests/status_browser.cjs, in a
network namespace where only the server's port is reachable (as the docs test opens the site)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from netns_support import AVAILABLE, only_loopback_port
from peers import ROOT, requires

CHROMIUM = shutil.which("chromium")
NODE = shutil.which("node")
DRIVER = Path(__file__).with_name("status_browser.cjs")
PLAYWRIGHT = ROOT / "node_modules" / "playwright-core"
requires_browser = requires(CHROMIUM is not None and NODE is not None and PLAYWRIGHT.is_dir() and AVAILABLE,
                            "chromium, node, playwright-core (@playwright/mcp), unshare and ip")


def browse(url: str, key: str, expected: list[str], screenshot: Path | None = None, *,
           attacks: bool = False) -> dict[str, Any]:
    """What a person sees who opens `url`, signs in with `key` and waits for each `expected`
    text in a table cell; with `attacks`, what the server answered when the same browser then
    tried the page from elsewhere (see tests/status_browser.cjs)."""
    port = url.split(":")[2].split("/")[0]
    with only_loopback_port(port) as isolated:
        done = subprocess.run([*isolated, NODE or "node", str(DRIVER), url, key, json.dumps(expected),
                               *([str(screenshot)] if screenshot else [])],
                              capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL,
                              env={"PATH": "/usr/bin:/bin", "HOME": str(Path.home()), "CHROMIUM": CHROMIUM or "",
                                   **({"ATTACKS": "1"} if attacks else {})},
                              cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    seen: dict[str, Any] = json.loads(done.stdout)
    return seen


def screenshot(name: str) -> Path | None:
    """Where the browser saves a picture of the page: `$HOSTLINK_STATUS_SCREENSHOTS/name` when
    that is set (how the docs' pictures are made), else nowhere."""
    folder = os.environ.get("HOSTLINK_STATUS_SCREENSHOTS")
    return Path(folder) / name if folder else None
