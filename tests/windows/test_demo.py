"""The README's first command, `hostlink demo`, on Windows: the embedded demo server over stdio,
its tools listed through the `mcp` tool, one called."""

from __future__ import annotations

import json
import os
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


def test_mcp_add_then_call(tmp_path):
    """The README's CLI example: the demo server added to the user's config (in %APPDATA% on
    Windows), then one of its tools called."""
    env = {**os.environ, "APPDATA": str(tmp_path / "Roaming"), "LOCALAPPDATA": str(tmp_path / "Local"),
           "USERPROFILE": str(tmp_path)}
    hostlink = [sys.executable, "-c", "from hostlink.cli import main; main()"]
    options = {"capture_output": True, "text": True, "cwd": tmp_path, "env": env, "stdin": subprocess.DEVNULL,
               "timeout": 180}
    added = subprocess.run([*hostlink, "mcp", "add", "demo", "--", sys.executable, "-m", "hostlink.demo"], **options)
    assert added.returncode == 0, added.stderr[-3000:]
    config = tmp_path / "Roaming" / "hostlink" / "mcp.json"
    document = json.loads(config.read_text())
    assert document["mcpServers"]["demo"] == {"command": sys.executable, "args": ["-m", "hostlink.demo"]}
    # Under Wine on a loaded machine `import mcp` alone can take 15 s, the default setup bound.
    document["mcpServers"]["demo"]["requestTimeoutMs"] = 120000
    config.write_text(json.dumps(document))
    called = subprocess.run([*hostlink, "mcp", "call", "demo", "echo", '{"text": "hello"}'], **options)
    assert "Traceback" not in called.stdout + called.stderr, called.stderr[-3000:]
    assert called.returncode == 0, called.stderr[-3000:]
    assert called.stdout.strip() == "hello"
