"""`hostlink mcp serve` as a command: `--show-config` prints what adds it to each MCP host
and writes nothing; `-v` puts a failing server's bounded, sanitized stderr tail on stderr
(never on the protocol stream); its options are checked before anything starts."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from adversarial.support import stdio
from gateway_support import HOSTLINK, gateway_env, stdio_gateway

PROGRAMS = ("claude-code", "claude-desktop", "cursor", "vscode", "codex", "gemini")


def files_under(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


@pytest.mark.parametrize("program", PROGRAMS)
def test_show_config_prints_the_snippet_and_writes_nothing(tmp_path, program):
    environ = gateway_env(tmp_path, {})
    before = files_under(tmp_path)
    done = subprocess.run([HOSTLINK, "mcp", "serve", "--expose", "tools", "--show-config", program],
                          capture_output=True, text=True, env=environ, cwd=tmp_path, timeout=30)
    assert done.returncode == 0, done.stderr
    assert files_under(tmp_path) == before
    out = done.stdout
    assert (HOSTLINK in out and '"mcp"' in out) or "mcp serve" in out
    if program == "claude-code":
        assert f"claude mcp add hostlink -- {HOSTLINK} mcp serve --expose tools" in out
    elif program == "codex":
        assert "[mcp_servers.hostlink]" in out and 'args = ["mcp", "serve", "--expose", "tools"]' in out
    else:
        document = json.loads(out.split("\n", 1)[1])
        entry = document["servers" if program == "vscode" else "mcpServers"]["hostlink"]
        assert entry["command"] == HOSTLINK and entry["args"] == ["mcp", "serve", "--expose", "tools"]


@pytest.mark.anyio
@pytest.mark.parametrize("verbose", [False, True])
async def test_verbose_puts_the_failing_servers_words_on_stderr(tmp_path, verbose):
    import anyio

    errors = tmp_path / "stderr"
    with errors.open("w") as errlog:
        async with stdio_gateway(tmp_path, {"fatal": stdio("fatal")}, *(["-v"] if verbose else []),
                                 errlog=errlog) as client:
            failed = await client.call_tool("mcp", {"action": "call", "server": "fatal", "tool": "boom"})
            await anyio.sleep(0.1)
    said = errors.read_text()
    assert failed.is_error and "FATAL" not in failed.content[0].text  # the server's words are not the model's
    assert ("FATAL: missing API_KEY" in said) is verbose
    assert "\x1b" not in said


def test_options_are_checked_first(tmp_path):
    environ = gateway_env(tmp_path, {})
    done = subprocess.run([HOSTLINK, "mcp", "serve", "--port", "9999"], capture_output=True, text=True,
                          env=environ, timeout=30, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and "--port and --token-env go with --http" in done.stderr
    done = subprocess.run([HOSTLINK, "mcp", "serve", "--http", "--token-env", "NOPE_NOT_SET"], capture_output=True,
                          text=True, env=environ, timeout=30)
    assert done.returncode == 2 and "at least 16 characters" in done.stderr
