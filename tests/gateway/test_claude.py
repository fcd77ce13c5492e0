"""`hostlink mcp serve` added to the real, pinned `claude` CLI (an MCP host nobody here
wrote) with `--mcp-config`, against the fake Anthropic API: the tools Claude offers the
model come from the gateway, and a call Claude makes runs through hostlink to the upstream
server and its answer reaches the next API request. Nothing is left running."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from claude_transport_support import fa
from gateway_support import EVERYTHING, HOSTLINK, NODE, demo, everything, gateway_env, leftovers, live_mentioning
from peers import CLAUDE, requires_claude

pytestmark = [pytest.mark.slow, requires_claude,
              pytest.mark.skipif(not (EVERYTHING.is_file() and NODE) and not os.environ.get("CI"),
                                 reason="server-everything or node is not installed")]


GRACE_SECONDS = 5


def run_claude(api, home, tmp_path, face: str, tool: str, arguments: dict) -> list[dict]:
    environ = gateway_env(tmp_path, {"demo": demo(), "everything": everything()})
    servers = {"hostlink": {"command": HOSTLINK, "args": ["mcp", "serve", "--expose", face],
                            "env": {key: environ[key] for key in ("XDG_CONFIG_HOME", "HOSTLINK_RUNTIME_DIR")}}}
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    (tmp_path / "tmp").mkdir()
    api.push(fa.tool_use(tool, arguments), fa.text("all done"))
    env = {"HOME": str(home), "PATH": os.environ["PATH"], "TMPDIR": str(tmp_path / "tmp"),
           "ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": "sk-fake", "ENABLE_TOOL_SEARCH": "false",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "CLAUDE_CODE_MAX_RETRIES": "0"}
    argv = [str(CLAUDE), "-p", "use the tool", "--mcp-config", str(tmp_path / "mcp.json"), "--strict-mcp-config",
            "--setting-sources", "", "--allowedTools", "mcp__hostlink", "--tools", "", "--model", "sonnet",
            "--output-format", "json", "--no-session-persistence"]
    done = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-2000:]
    # claude exits without waiting for its MCP server: the gateway stops its servers just after
    deadline = time.monotonic() + GRACE_SECONDS
    while live_mentioning(str(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert live_mentioning(str(tmp_path)) == [] and leftovers(tmp_path) == []
    return [request for request in api.messages_requests() if request.get("tools")]


def tool_names(request: dict) -> list[str]:
    return [tool["name"] for tool in request["tools"]]


def tool_result_text(request: dict) -> str:
    for message in request["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "tool_result":
                content = block["content"]
                return content if isinstance(content, str) else "".join(c.get("text", "") for c in content)
    raise AssertionError("no tool result in the request")


def test_proxy_face_in_claude_code(api, home, tmp_path):
    requests = run_claude(api, home, tmp_path, "proxy", "mcp__hostlink__mcp",
                          {"action": "call", "server": "everything", "tool": "get-sum", "args": {"a": 2, "b": 40}})
    assert tool_names(requests[0]) == ["mcp__hostlink__mcp"]
    assert "42" in tool_result_text(requests[1])


def test_tools_face_in_claude_code(api, home, tmp_path):
    requests = run_claude(api, home, tmp_path, "tools", "mcp__hostlink__demo__echo", {"text": "via claude"})
    names = tool_names(requests[0])
    assert "mcp__hostlink__demo__echo" in names and "mcp__hostlink__everything__get-sum" in names
    assert "via claude" in tool_result_text(requests[1])  # Claude Code shows the structured content
