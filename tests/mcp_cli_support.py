"""Running `hostlink mcp …` as a person does: a config file in a temporary HOME, the command in a
fresh interpreter (the CLI tests of issue 15: output, progress, errors, elicitation)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def configure(tmp_path: Path, servers: dict) -> dict[str, str]:
    config_home = tmp_path / "config"
    (config_home / "mcp").mkdir(parents=True, exist_ok=True)
    (config_home / "mcp" / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    environ = {key: value for key, value in os.environ.items()
               if key not in ("HOSTLINK_TRUST_PROJECT", "GITHUB_TOKEN")}
    environ.update(XDG_CONFIG_HOME=str(config_home), HOME=str(tmp_path), HOSTLINK_RUNTIME_DIR=str(tmp_path / "rt"))
    return environ


def hostlink(env: dict[str, str], tmp_path: Path, *argv: str, stdin: str | None = None):
    result = subprocess.run([sys.executable, "-c", "from hostlink.cli import main; main()", *argv],
                            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, input=stdin)
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    return result


EVERYTHING = Path(__file__).parents[1] / "node_modules/@modelcontextprotocol/server-everything/dist/index.js"
NODE = shutil.which("node")
needs_everything = pytest.mark.skipif(not (EVERYTHING.is_file() and NODE) and not os.environ.get("CI"),
                                      reason="npm peer @modelcontextprotocol/server-everything or node is missing")
EVERY = {"command": NODE or "node", "args": [str(EVERYTHING), "stdio"]}
