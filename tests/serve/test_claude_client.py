"""Claude Code itself as a client of `hostlink serve`: the pinned `claude` CLI with
`ANTHROPIC_BASE_URL` at the endpoint (a throwaway HOME), `hostlink serve` upstream of it
running its own `claude` against the fake Anthropic API. What Claude Code sends — full
model ids, a trailing system message, `?beta=true`, `anthropic-beta`, adaptive thinking,
`output_config.effort`, its own tools — must work, and its tools run in the client.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest

from peers import NODE_BIN, requires_claude
from serve_support import (
    KEY,
    PNG,
    TOOL_PREFIX,
    api_images,
    fa,
    records,
    tool_results,
)

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("fresh_script"), requires_claude]

CLAUDE = Path(__file__).resolve().parents[2] / "node_modules" / ".bin" / "claude"
MANY_TOOLS = Path(__file__).resolve().parents[1] / "fakes" / "mcp_many_tools_server.py"


@pytest.fixture
def client(server, tmp_path):
    """Runs the client `claude` in `tmp_path` (its HOME and working directory)."""
    env = {"PATH": f"{NODE_BIN}:/usr/bin:/bin", "HOME": str(tmp_path), "ANTHROPIC_BASE_URL": server.base_url,
           "ANTHROPIC_API_KEY": KEY, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "CLAUDE_CODE_MAX_RETRIES": "0"}

    def run(*args: str, stdin: str | None = None, extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        done = subprocess.run([str(CLAUDE), *args], env={**env, **(extra or {})}, cwd=tmp_path, input=stdin,
                              capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stderr[-2000:]
        return done

    return run


def client_requests(api) -> list[dict]:
    return api.messages_requests()


def test_plain_prompt_with_the_clients_default_model_id(client, api):
    api.push(fa.text("Hello from the endpoint."))
    assert client("-p", "Say hello.").stdout.strip() == "Hello from the endpoint."
    (upstream,) = client_requests(api)
    # the client's trailing system message (its environment) was folded into the conversation
    assert any("<system-message>" in json.dumps(record) for record in records(upstream))
    assert upstream["model"].startswith("claude-opus")  # claude-opus-5-5 -> opus -> the CLI's opus


def test_stream_json_output_with_a_full_sonnet_id(client, api):
    api.push(fa.Reply((fa.Thinking("Thinking it over."), fa.Text("Streamed through two claudes.")), chunk=4))
    done = client("-p", "Stream it.", "--model", "sonnet", "--output-format", "stream-json", "--verbose")
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    result = lines[-1]
    assert result["type"] == "result" and result["subtype"] == "success"
    assert result["result"] == "Streamed through two claudes."
    assert client_requests(api)[-1]["model"].startswith("claude-sonnet")


def test_a_read_tool_round_trip_runs_in_the_client(client, api, tmp_path):
    (tmp_path / "notes.txt").write_text("the secret number is 4711\n")
    api.push(fa.tool_use(TOOL_PREFIX + "Read", {"file_path": str(tmp_path / "notes.txt")}),
             fa.text("The number is 4711."))
    done = client("-p", "What number is in notes.txt?", "--allowedTools", "Read")
    assert done.stdout.strip() == "The number is 4711."
    first, second = client_requests(api)[-2:]
    assert "Read" in json.dumps([tool["name"] for tool in first["tools"]])
    assert "the secret number is 4711" in json.dumps(tool_results(second))


def test_an_image_from_the_client(client, api):
    api.push(fa.text("A one-pixel image."))
    message = {"type": "user", "message": {"role": "user", "content": [
        {"type": "text", "text": "What is this?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}]}}
    done = client("-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
                  stdin=json.dumps(message) + "\n")
    assert json.loads(done.stdout.splitlines()[-1])["result"] == "A one-pixel image."
    (image,) = api_images(client_requests(api)[-1])
    assert base64.b64decode(image["source"]["data"]) == base64.b64decode(PNG)


def test_tool_search_loads_one_mcp_tool_of_forty_and_claude_code_runs_it(client, api, server, tmp_path):
    """ENABLE_TOOL_SEARCH: the MCP tools are deferred behind Claude Code's own ToolSearch; the
    model searches, the found tool is loaded, proposed, run by Claude Code, and its result
    reaches the model."""
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"records": {"command": sys.executable, "args": [str(MANY_TOOLS)]}}}))
    api.push(fa.tool_use(TOOL_PREFIX + "ToolSearch", {"query": "select:mcp__records__record_17"}),
             fa.tool_use(TOOL_PREFIX + "mcp__records__record_17", {"key": "blue"}),
             fa.text("Record 17 is found."))
    logged = len(server.stderr().splitlines())
    done = client("-p", "What is record 17 under the key blue?", "--mcp-config", str(config),
                  "--allowedTools", "ToolSearch,mcp__records__record_17", extra={"ENABLE_TOOL_SEARCH": "true"})
    assert done.stdout.strip() == "Record 17 is found."
    searched, loaded, answered = client_requests(api)[-3:]
    offered = [[tool["name"].removeprefix(TOOL_PREFIX) for tool in request["tools"]
                if tool["name"].startswith(TOOL_PREFIX + "mcp__")] for request in (searched, loaded, answered)]
    assert offered == [[], ["mcp__records__record_17"], ["mcp__records__record_17"]]  # one of 40, once loaded
    assert "Tool loaded: mcp__records__record_17" in json.dumps(tool_results(loaded))
    assert "record 17 of blue: value-04532" in json.dumps(tool_results(answered))  # run by Claude Code
    access = [line for line in server.stderr().splitlines()[logged:] if " POST /v1/messages " in line]
    assert len(access) == 3 and all(" 200 " in line for line in access), access
