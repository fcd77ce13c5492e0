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


@pytest.fixture
def client(server, tmp_path):
    """Runs the client `claude` in `tmp_path` (its HOME and working directory)."""
    env = {"PATH": f"{NODE_BIN}:/usr/bin:/bin", "HOME": str(tmp_path), "ANTHROPIC_BASE_URL": server.base_url,
           "ANTHROPIC_API_KEY": KEY, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "CLAUDE_CODE_MAX_RETRIES": "0"}

    def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
        done = subprocess.run([str(CLAUDE), *args], env=env, cwd=tmp_path, input=stdin, capture_output=True,
                              text=True, timeout=180)
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
