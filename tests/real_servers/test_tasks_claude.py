"""Claude Code as an MCP host, through the gateway, runs a task tool of the real FastMCP task
server (tests/real_servers/tasks_server.py) to its result: the issue's 30 s task. A module of its
own, so that its wait — mostly a sleeping server — runs beside the other task tests, not after."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from peers import requires_claude

pytestmark = pytest.mark.real_servers

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".venv-tasks" / "bin" / "python"
SERVER = str(Path(__file__).parent / "tasks_server.py")
STDIO = {"command": str(PYTHON), "args": [SERVER], "requestTimeoutMs": 60000}

FACES = {"proxy": ("mcp__hostlink__mcp", {"action": "call", "server": "slow", "tool": "crunch",
                                          "args": {"seconds": 30}}),
         "tools": ("mcp__hostlink__slow__crunch", {"seconds": 30})}


def _claude_through_the_gateway(folder: Path, face: str, api) -> subprocess.Popen:
    """Claude Code with the gateway (`--expose face`) as its one MCP server, asked to call the
    face's tool once (the fake API's first answer) and then to finish."""
    import os

    from claude_transport_support import fa
    from gateway_support import HOSTLINK, gateway_env
    from peers import CLAUDE

    folder.mkdir()
    environ = gateway_env(folder, {"slow": {**STDIO, "tasks": True}})
    servers = {"hostlink": {"command": HOSTLINK, "args": ["mcp", "serve", "--expose", face],
                            "env": {key: environ[key] for key in ("XDG_CONFIG_HOME", "HOSTLINK_RUNTIME_DIR")}}}
    (folder / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    (folder / "tmp").mkdir()
    tool, arguments = FACES[face]
    api.push(fa.tool_use(tool, arguments), fa.text("all done"))
    env = {"HOME": str(folder / "home"), "PATH": os.environ["PATH"], "TMPDIR": str(folder / "tmp"),
           "ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": "sk-fake", "ENABLE_TOOL_SEARCH": "false",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "CLAUDE_CODE_MAX_RETRIES": "0"}
    argv = [str(CLAUDE), "-p", "use the tool", "--mcp-config", str(folder / "mcp.json"), "--strict-mcp-config",
            "--setting-sources", "", "--allowedTools", "mcp__hostlink", "--tools", "", "--model", "sonnet",
            "--output-format", "json", "--no-session-persistence"]
    return subprocess.Popen(argv, env=env, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL)


def _tool_result(api) -> str:
    second = [request for request in api.messages_requests() if request.get("tools")][1]
    results = [block for message in second["messages"] if isinstance(message["content"], list)
               for block in message["content"] if block.get("type") == "tool_result"]
    content = results[0]["content"]
    return content if isinstance(content, str) else "".join(part.get("text", "") for part in content)


@pytest.mark.slow
@requires_claude
def test_claude_code_as_the_gateways_host_runs_a_30_s_task_tool_to_its_result(tmp_path):
    """Claude Code declares no tasks: the gateway follows the task for it, the issue's 30 s task
    on both faces at once (each waits on a sleeping server, so together they take one wait)."""
    from claude_transport_support import fa
    from gateway_support import leftovers, live_mentioning

    with fa.FakeAnthropic() as proxy_api, fa.FakeAnthropic() as tools_api:
        apis = {"proxy": proxy_api, "tools": tools_api}
        running = {face: _claude_through_the_gateway(tmp_path / face, face, api) for face, api in apis.items()}
        for face, process in running.items():
            _out, err = process.communicate(timeout=180)
            assert process.returncode == 0, (face, err[-2000:])
            assert "crunched for 30 s" in _tool_result(apis[face]), face
    deadline = time.monotonic() + 5
    while live_mentioning(str(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert live_mentioning(str(tmp_path)) == []
    assert leftovers(tmp_path / "proxy") == [] and leftovers(tmp_path / "tools") == []
