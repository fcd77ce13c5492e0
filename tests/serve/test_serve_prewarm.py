"""A conversation's idle `claude` through `hostlink serve`: the child a loop's last round
started ahead is stopped as soon as that round answers, and a child prewarmed for a follow-up
nobody sends is stopped within the idle bound (shortened here) while the server keeps running;
concurrent conversations each keep theirs, at most one per request slot; the access log says
which request a prewarmed child answered and how many wait idle."""

from __future__ import annotations

import json
import time

import pytest

from peers import requires_claude
from serve_support import KEY, TOOL_PREFIX, ServeProcess, fa

pytestmark = [pytest.mark.slow, requires_claude]

IDLE = 10.0  # long enough that a loaded machine still reaches each round within it
TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}


def chat(server: ServeProcess, messages: list[dict], tools: list[dict] | None = None) -> dict:
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    try:
        connection.request("POST", "/v1/chat/completions",
                           json.dumps({"model": "sonnet", "messages": messages, "tools": tools or [TOOL]}),
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
    assert [line.split(" ", 8)[8] for line in lines] == ["prewarmed=no idle=1", "prewarmed=yes idle=0",
                                                         "prewarmed=no idle=1"]
    assert server.leftovers() == ([], [])


def tool(name: str) -> dict:
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}


def propose(server: ServeProcess, api, name: str) -> list[dict]:
    """A conversation's first round, with a tool of its own (so a child of its own): what its
    next round sends."""
    api.push(fa.tool_use(TOOL_PREFIX + name, {}))
    messages: list[dict] = [{"role": "user", "content": f"{name}?"}]
    reply = chat(server, messages, [tool(name)])
    return [*messages, reply, {"role": "tool", "tool_call_id": reply["tool_calls"][0]["id"], "content": "ok"}]


def waiting_children(server: ServeProcess) -> int:
    return sum(1 for path in server.runtime.iterdir() if path.name.startswith("claude-request-"))


def test_concurrent_conversations_each_keep_their_next_claude_up_to_one_per_slot(tmp_path, api):
    server = ServeProcess(tmp_path / "serve", api, "--max-concurrent", "2")
    asked = len(api.messages_requests())  # the module's fake API served other tests before
    try:
        first, second = propose(server, api, "weather"), propose(server, api, "time")  # interleaved rounds
        for messages, name in ((first, "weather"), (second, "time")):
            api.push(fa.text(f"{name}: done."))
            assert chat(server, messages, [tool(name)])["content"] == f"{name}: done."
        server.wait_no_claude()  # each loop ended: the children started ahead of the last rounds are stopped
        for name in ("news", "mail", "maps"):  # three waiting conversations, two slots
            propose(server, api, name)
        deadline = time.monotonic() + 10
        while waiting_children(server) != 2:  # the oldest conversation's child is stopped for the third's
            assert time.monotonic() < deadline, sorted(path.name for path in server.runtime.iterdir())
            time.sleep(0.05)
        assert len(api.messages_requests()) - asked == 7  # no prewarmed child ever sent anything
    finally:
        _, stderr = server.stop()
    lines = [line for line in stderr.splitlines() if " /v1/chat/completions " in line]
    assert [line.split(" ", 8)[8] for line in lines] == [
        "prewarmed=no idle=1", "prewarmed=no idle=2",  # two conversations, one child waiting for each
        "prewarmed=yes idle=1", "prewarmed=yes idle=0",  # each took its own (one slot kept only the last)
        "prewarmed=no idle=1", "prewarmed=no idle=2", "prewarmed=no idle=2",  # at most one per slot
    ]
    assert server.leftovers() == ([], [])
