"""The real claude.exe of the pinned version under the lane's Wine: it starts (Wine 8 needs the
lane's bcryptprimitives.dll for its ProcessPrng) and answers `-p` from the fake Anthropic API on
127.0.0.1."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import fake_anthropic  # tests/fakes, on the path through the conftest

from windows_support import WINDOWS_ONLY

pytestmark = WINDOWS_ONLY

VERSION = json.loads((Path(__file__).parents[2] / "package.json").read_text())["dependencies"][
    "@anthropic-ai/claude-code"]


def _environment(home: Path, api) -> dict[str, str]:
    """The lane's environment with a throwaway profile, pointed at the fake API, nothing else reached."""
    return {**os.environ, "USERPROFILE": str(home), "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude"),
            "ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": "sk-test",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}


def test_version(claude_exe):
    result = subprocess.run([str(claude_exe), "--version"], capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"{VERSION} (Claude Code)"


def test_print_answers_from_the_fake_api(claude_exe, fake_api, tmp_path):
    fake_api.push(fake_anthropic.text("hello from the fake API"))
    result = subprocess.run([str(claude_exe), "-p", "say hello", "--tools", "", "--max-turns", "1"],
                            capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=180,
                            env=_environment(tmp_path, fake_api), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "hello from the fake API"
    asked = [body for body in fake_api.messages_requests() if body.get("stream")]
    assert any("say hello" in json.dumps(body["messages"]) for body in asked)
