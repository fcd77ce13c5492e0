"""Running `hostlink` on real configuration files in a temporary HOME (config commands
and import tests): in a fresh interpreter, or in this process where no process boundary is under test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from mcp_cli_support import run_here


def environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("HOSTLINK_TRUST_PROJECT", "API_KEY", "GH_TOKEN")}
    env.update(HOME=str(tmp_path / "home"), XDG_CONFIG_HOME=str(tmp_path / "config"),
               HOSTLINK_RUNTIME_DIR=str(tmp_path / "rt"), **extra)
    return env


def hostlink(tmp_path: Path, *argv: str, env: dict[str, str] | None = None, stdin: str | None = None,
             prelude: str = "") -> subprocess.CompletedProcess[str]:
    (tmp_path / "project").mkdir(exist_ok=True)
    code = f"import sys\n{prelude}\nfrom hostlink.cli import main\nsys.argv[0] = 'hostlink'\nmain()"
    feed = {"input": stdin} if stdin is not None else {"stdin": subprocess.DEVNULL}  # never a terminal
    result = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                            env=env or environment(tmp_path), cwd=tmp_path / "project", timeout=60, **feed)
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    return result


def hostlink_here(tmp_path: Path, *argv: str, env: dict[str, str] | None = None,
                  stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """`hostlink(...)` in this process (mcp_cli_support.hostlink_here says what stays the same)."""
    (tmp_path / "project").mkdir(exist_ok=True)
    return run_here(env or environment(tmp_path), tmp_path / "project", argv, stdin)


def user_file(tmp_path: Path) -> Path:
    return tmp_path / "config" / "hostlink" / "mcp.json"


def seed(tmp_path: Path, text: str, mode: int = 0o600) -> Path:
    path = user_file(tmp_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path
