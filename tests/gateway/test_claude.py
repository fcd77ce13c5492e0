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


def claude_print(api, home, tmp_path) -> subprocess.CompletedProcess[bytes]:
    """`claude -p` with the gateway of tmp_path/mcp.json as its only MCP server, against the fake API."""
    env = {"HOME": str(home), "PATH": os.environ["PATH"], "TMPDIR": str(tmp_path / "tmp"),
           "ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": "sk-fake", "ENABLE_TOOL_SEARCH": "false",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "CLAUDE_CODE_MAX_RETRIES": "0"}
    argv = [str(CLAUDE), "-p", "use the tool", "--mcp-config", str(tmp_path / "mcp.json"), "--strict-mcp-config",
            "--setting-sources", "", "--allowedTools", "mcp__hostlink", "--tools", "", "--model", "sonnet",
            "--output-format", "json", "--no-session-persistence"]
    return subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, timeout=120, stdin=subprocess.DEVNULL)


def run_claude(api, home, tmp_path, face: str, tool: str, arguments: dict) -> list[dict]:
    environ = gateway_env(tmp_path, {"demo": demo(), "everything": everything()})
    servers = {"hostlink": {"command": HOSTLINK, "args": ["mcp", "serve", "--expose", face],
                            "env": {key: environ[key] for key in ("XDG_CONFIG_HOME", "HOSTLINK_RUNTIME_DIR")}}}
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    (tmp_path / "tmp").mkdir()
    api.push(fa.tool_use(tool, arguments), fa.text("all done"))
    done = claude_print(api, home, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    # claude exits without waiting for its MCP server: the gateway stops its servers just after
    deadline = time.monotonic() + GRACE_SECONDS
    while live_mentioning(str(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert live_mentioning(str(tmp_path)) == [] and leftovers(tmp_path) == []
    return [request for request in api.messages_requests() if request.get("tools")]


def tool_names(request: dict) -> list[str]:
    return [tool["name"] for tool in request["tools"]]


def tool_result_text(request: dict, *, last: bool = False) -> str:
    for message in reversed(request["messages"]) if last else request["messages"]:
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


def test_claude_code_sees_an_add_and_a_remove_while_it_holds_the_gateway(api, home, tmp_path):
    """While Claude Code runs a slow tool, `hostlink mcp add` in another terminal: Claude
    Code (on the 2026-07-28 protocol) hears it on its `subscriptions/listen` stream, lists
    the gateway's tools again and its next request offers the new ones. Then `remove`: the
    gateway stops the server and tells Claude Code on the same stream, Claude Code lists again
    and gets the list without the removed tools, all before its next request. The wire
    between them is recorded, and both figures are printed.

    What Claude Code 2.1.332 then does is its own (docs/hosts/mcp-serve.md): its next
    requests still offer the removed tools, and it refuses a call of one itself, without
    asking the gateway. Pinned here, so a Claude Code that starts dropping them shows up."""
    import sys
    import threading
    from pathlib import Path

    from gateway_support import fixture

    fakes = Path(__file__).parents[1] / "fakes"
    recorder, log, wire = fakes / "mcp_recording_server.py", tmp_path / "added.log", tmp_path / "wire.jsonl"
    environ = gateway_env(tmp_path, {"fx": fixture()})
    servers = {"hostlink": {"command": sys.executable,
                            "args": [str(fakes / "stdio_wire_recorder.py"), str(wire), "--",
                                     HOSTLINK, "mcp", "serve", "--expose", "tools"],
                            "env": {key: environ[key] for key in ("XDG_CONFIG_HOME", "HOSTLINK_RUNTIME_DIR")}}}
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    (tmp_path / "tmp").mkdir()
    slow = fa.tool_use("mcp__hostlink__fx__slow", {"seconds": 5})
    api.push(slow, fa.tool_use("mcp__hostlink__fx__slow", {"seconds": 5}),
             fa.tool_use("mcp__hostlink__added__echo", {"text": "still there?"}), fa.text("all done"))
    figures: dict[str, float] = {}

    def edit(after_requests: int, *argv: str) -> float:
        while len(api.messages_requests()) < after_requests:
            time.sleep(0.02)
        began = time.time()  # the wire recorder's clock
        done = subprocess.run([HOSTLINK, "mcp", *argv], env=environ, cwd=tmp_path, capture_output=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return began

    def listed(began: float, added: bool) -> float | None:
        """When the gateway answered a `tools/list` Claude Code sent after `began` with (or
        without) the added server's tools."""
        asked, answered = set(), None
        for line in wire.read_text().splitlines() if wire.exists() else []:
            record = json.loads(line)
            message = record["message"]
            if not isinstance(message, dict) or record["t"] < began:
                continue
            if record["from"] == "host" and message.get("method") == "tools/list":
                asked.add(message["id"])
            elif record["from"] == "server" and message.get("id") in asked and "result" in message:
                names = [tool["name"] for tool in message["result"]["tools"]]
                if ("added__echo" in names) == added:
                    answered = record["t"]
        return None if answered is None else answered - began

    def person() -> None:
        for key, after, argv in (("add", 1, ("add", "added", "--", sys.executable, str(recorder), str(log))),
                                 ("remove", 2, ("remove", "added"))):
            began = edit(after, *argv)
            while listed(began, key == "add") is None and time.time() - began < 20:
                time.sleep(0.02)
            seconds = listed(began, key == "add")
            figures[key] = float("inf") if seconds is None else seconds
            figures[f"requests before the {key} was listed"] = len(api.messages_requests())
        began = time.time()
        while live_mentioning(str(log)) and time.time() - began < 10:
            time.sleep(0.05)
        figures["stopped"] = 0.0 if live_mentioning(str(log)) else time.time() - began  # before claude ends

    thread = threading.Thread(target=person, daemon=True)
    thread.start()
    done = claude_print(api, home, tmp_path)
    thread.join(timeout=30)
    assert done.returncode == 0, done.stderr[-2000:]
    print(f"add -> Claude Code's new tool list: {figures['add']:.2f} s; "
          f"remove -> Claude Code's new tool list: {figures['remove']:.2f} s")
    requests = [request for request in api.messages_requests() if request.get("tools")]
    assert "mcp__hostlink__added__echo" not in tool_names(requests[0])
    assert "mcp__hostlink__added__echo" in tool_names(requests[1])  # the new tool list
    assert figures["add"] < 5 and figures["remove"] < 5 and 0 < figures["stopped"] < 5
    # Claude Code had the list without the removed tools before its third request...
    assert figures["requests before the remove was listed"] == 2 and len(requests) == 4
    # ...and still offers them (Claude Code 2.1.332, whichever protocol; see the docs) ...
    assert "mcp__hostlink__added__echo" in tool_names(requests[2])
    # ...but refuses the model's call of one itself: it never reaches the gateway
    assert "No such tool available: mcp__hostlink__added__echo" in tool_result_text(requests[3], last=True)
    calls = [json.loads(line)["message"] for line in wire.read_text().splitlines()]
    assert not [call for call in calls if isinstance(call, dict) and call.get("method") == "tools/call"
                and call["params"]["name"] == "added__echo"]
    deadline = time.monotonic() + GRACE_SECONDS
    while live_mentioning(str(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert live_mentioning(str(tmp_path)) == [] and leftovers(tmp_path) == []
