"""A conversation's idle `claude` through `hostlink serve`: the child a loop's last round
started ahead is stopped as soon as that round answers, and a child prewarmed for a follow-up
nobody sends is stopped within the idle bound (shortened here) while the server keeps running;
the access log says which request a prewarmed child answered."""

from __future__ import annotations

import json
import time

import pytest

from peers import requires_claude
from serve_support import KEY, TOOL_PREFIX, ServeProcess, fa

pytestmark = [pytest.mark.slow, requires_claude]

IDLE = 10.0  # long enough that a loaded machine still reaches each round within it
TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}


def chat(server: ServeProcess, messages: list[dict]) -> dict:
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    try:
        connection.request("POST", "/v1/chat/completions",
                           json.dumps({"model": "sonnet", "messages": messages, "tools": [TOOL]}),
                           {"authorization": f"Bearer {KEY}", "content-type": "application/json"})
        response = connection.getresponse()
        body = json.loads(response.read())
    finally:
        connection.close()
    assert response.status == 200, body
    return body["choices"][0]["message"]


def test_an_unused_prewarmed_claude_is_stopped_within_its_idle_bound(tmp_path, api):
    server = ServeProcess(tmp_path / "serve", api, "--prewarm-idle", str(IDLE))
    try:
        api.push(fa.tool_use(TOOL_PREFIX + "get_weather", {"city": "Oslo"}), fa.text("Sunny."))
        messages: list[dict] = [{"role": "user", "content": "weather in Oslo?"}]
        first = chat(server, messages)
        messages += [first, {"role": "tool", "tool_call_id": first["tool_calls"][0]["id"], "content": "sunny"}]
        assert chat(server, messages)["content"] == "Sunny."
        server.wait_no_claude(timeout=IDLE - 2)  # the loop ended: the child started ahead of its round is stopped
        api.push(fa.tool_use(TOOL_PREFIX + "get_weather", {"city": "Rome"}))
        chat(server, [{"role": "user", "content": "weather in Rome?"}])  # and the client never follows up
        server.wait_for_claude(30)
        idle_from = time.monotonic()
        server.wait_no_claude(timeout=IDLE + 10)
        assert time.monotonic() - idle_from < IDLE + 5  # the bound, and the stop itself
        assert server.process.poll() is None  # the server still runs: the bound stopped it, not an exit
    finally:
        _, stderr = server.stop()
    lines = [line for line in stderr.splitlines() if " /v1/chat/completions " in line]
    assert [line.rsplit(" ", 1)[1] for line in lines] == ["prewarmed=no", "prewarmed=yes", "prewarmed=no"]
    assert server.leftovers() == ([], [])
