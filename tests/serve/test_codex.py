"""The Codex CLI as a client of `hostlink serve` through the README's `config.toml` recipe
(`wire_api = "responses"`): a plain prompt, and a shell command Codex runs itself whose
output reaches the fake Anthropic API behind the endpoint's `claude`. Codex sends what the
Responses API allows and Claude cannot use (`store: false`, `include`, a `namespace`
tool and the built-in `web_search`); none of it fails the request.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from netns_support import AVAILABLE, only_loopback_port
from peers import NODE_BIN, requires
from serve_support import (
    CODEX_CONFIG,
    KEY,
    TOOL_PREFIX,
    fa,
    records,
    tool_results,
)

CODEX = NODE_BIN / "codex"
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("fresh_script"),
              requires((NODE_BIN / "claude").exists() and CODEX.exists(), "claude and codex CLIs"),
              requires(AVAILABLE, "unshare and ip")]

@pytest.fixture
def codex(server, tmp_path):
    """Codex looks up api.github.com and chatgpt.com at start: it runs where only the endpoint's
    port is reachable."""
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "config.toml").write_text(CODEX_CONFIG.format(base_url=server.base_url))
    env = {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "HOME": str(tmp_path), "CODEX_HOME": str(tmp_path / ".codex"),
           "HOSTLINK_KEY": KEY}
    with only_loopback_port(server.base_url.rsplit(":", 1)[1]) as isolated:

        def run(prompt: str) -> str:
            done = subprocess.run([*isolated, str(CODEX), "exec", "--skip-git-repo-check", prompt], env=env,
                                  cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180)
            assert done.returncode == 0, done.stderr[-3000:]
            return done.stdout

        yield run


def test_codex_plain_prompt(codex, api):
    api.push(fa.text("Hello from hostlink serve."))
    assert codex("Say hello.").strip() == "Hello from hostlink serve."
    upstream = api.messages_requests()[-1]
    assert "Say hello." in json.dumps(records(upstream))
    assert TOOL_PREFIX + "exec_command" in [tool["name"] for tool in upstream["tools"]]
    assert not any("web_search" in tool["name"] for tool in upstream["tools"])


def test_codex_runs_its_own_command_and_the_output_reaches_claude(codex, api, tmp_path):
    (tmp_path / "notes.txt").write_text("the number is 4711\n")
    api.push(fa.tool_use(TOOL_PREFIX + "exec_command", {"cmd": "cat notes.txt"}), fa.text("It says 4711."))
    assert codex("What does notes.txt say?").strip().endswith("It says 4711.")
    assert "the number is 4711" in json.dumps(tool_results(api.messages_requests()[-1]))
