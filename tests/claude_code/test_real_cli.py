"""The provider with the real `claude` CLI (npm `@anthropic-ai/claude-code`) against a fake
Anthropic Messages API on 127.0.0.1, plus the CLI facts the transport is built on.

The child reaches the fake only through the explicit, code-only `ClaudeTransportOptions`;
its HOME is a throwaway directory.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from claude_transport_support import (
    ECHO,
    FAKES,
    collect,
    context,
    live_processes_mentioning,
)
from hostlink.claude_code import compatibility, conversation, preflight, protocol
from hostlink.claude_code.catalog import build_catalog
from hostlink.claude_code.process import ClaudeTransportOptions, build_argv, child_environment, mcp_config
from hostlink.claude_code.provider import ClaudeCodeProvider
from hostlink.host import (
    Done,
    ErrorEvent,
    ImageContent,
    TextContent,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
    ToolResultMessage,
    UserMessage,
)

sys.path.insert(0, str(FAKES))
import fake_anthropic as fa

from peers import CLAUDE, CLAUDE_VERSION, requires_claude

pytestmark = [pytest.mark.slow, requires_claude]


def make_provider(api, home, executable=CLAUDE) -> ClaudeCodeProvider:
    return ClaudeCodeProvider(
        str(executable),
        cwd=home,
        options=ClaudeTransportOptions(test_api_base_url=api.base_url, test_api_key="sk-fake-test"),
        environ={"HOME": str(home), "PATH": os.environ["PATH"]},
    )


def user_blocks(request: dict) -> list[dict]:
    (message,) = [m for m in request["messages"] if m["role"] == "user"][:1]
    return message["content"]


def assert_clean(runtime_dir) -> None:
    assert live_processes_mentioning(str(runtime_dir)) == []
    assert list(runtime_dir.iterdir()) == []


@pytest.fixture(autouse=True)
def no_cli_temp_leftovers():
    """The CLI's per-session temp directories stay inside the removed request directory."""
    root = Path(os.environ.get("TMPDIR", "/tmp")) / f"claude-{os.getuid()}"
    before = set(root.rglob("*")) if root.exists() else set()
    yield
    after = set(root.rglob("*")) if root.exists() else set()
    assert not [p for p in after - before if "runtime" in p.name or "home" in p.name]


@pytest.mark.anyio
async def test_plain_text_streams_through(api, home, runtime_dir):
    api.push(fa.Reply((fa.Thinking("let me see"), fa.Text("Hello from the fake API")), chunk=5))
    events = await collect(make_provider(api, home), context("say hello @everyone"))
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert "".join(d.delta for d in deltas) == "Hello from the fake API" and len(deltas) > 1
    assert "".join(e.delta for e in events if isinstance(e, ThinkingDelta)) == "let me see"
    done = events[-1]
    assert isinstance(done, Done) and done.message.stop_reason == "stop"
    assert done.message.usage.input_tokens == 11 and done.message.usage.cost == 0.0
    (request,) = api.messages_requests()
    assert any(block["text"] == "You are a test host." for block in request["system"])
    assert [tool["name"] for tool in request["tools"] if not tool.get("defer_loading")] == ["mcp__hostlink__echo"]
    blocks = user_blocks(request)
    assert "cache_control" in blocks[-1] and "\\u0040everyone" in blocks[-1]["text"]
    assert_clean(runtime_dir)


@pytest.mark.anyio
async def test_tool_round_trip_keeps_earlier_records(api, home, runtime_dir):
    provider = make_provider(api, home)
    api.push(fa.Reply((fa.Text("I will echo."), fa.ToolUse("mcp__hostlink__echo", {"text": "hi"}, id="toolu_real_1")),
                      stop_reason="tool_use"))  # fmt: skip
    first = context("echo hi")
    events = await collect(provider, first)
    calls = [e.tool_call for e in events if isinstance(e, ToolCallEvent)]
    assert [(c.id, c.name, dict(c.arguments)) for c in calls] == [("toolu_real_1", "echo", {"text": "hi"})]
    done = events[-1]
    assert isinstance(done, Done) and done.message.stop_reason == "toolUse"
    # Claude was stopped before it could answer its own denial: one API request, no process.
    assert len(api.messages_requests()) == 1
    assert_clean(runtime_dir)

    api.push(fa.text("The echo said hi."))
    second = context(messages=[
        *first.messages,
        done.message,
        ToolResultMessage(tool_call_id="toolu_real_1", tool_name="echo", content=[TextContent("hi")]),
    ])  # fmt: skip
    events = await collect(provider, second)
    assert isinstance(events[-1], Done) and events[-1].message.stop_reason == "stop"
    assert "".join(e.delta for e in events if isinstance(e, TextDelta)) == "The echo said hi."
    before, after = (user_blocks(r) for r in api.messages_requests())
    strip = [{k: v for k, v in block.items() if k != "cache_control"} for block in before]
    assert [{k: v for k, v in block.items() if k != "cache_control"} for block in after[: len(before)]] == strip
    assert len(after) == len(before) + 2  # the assistant turn and the tool result
    assert "cache_control" in after[-1]
    assert_clean(runtime_dir)


@pytest.mark.anyio
async def test_forced_execution_attempt_fails_the_request(api, home, runtime_dir, tmp_path):
    """A claude that would run the tool (here: a wrapper adding an allow rule, as a managed
    policy could) reaches the proposal server; its violation marker fails the request."""
    wrapper = tmp_path / "claude-allowing"
    wrapper.write_text(f'#!/bin/sh\nexec "{CLAUDE}" "$@" --allowedTools mcp__hostlink__echo\n')
    wrapper.chmod(0o755)
    # The pause before message_delta gives the CLI's streaming tool execution time to call.
    api.push(fa.Reply((fa.ToolUse("mcp__hostlink__echo", {"text": "run me"}),), stop_reason="tool_use",
                      delay_before_delta=1.0))  # fmt: skip
    events = await collect(make_provider(api, home, wrapper), context("echo"))
    assert [type(e) for e in events] == [ErrorEvent]
    assert events[0].code == "tool_execution_attempted"
    assert_clean(runtime_dir)


@pytest.mark.anyio
async def test_api_errors_fail_closed(api, home, runtime_dir):
    provider = make_provider(api, home)
    api.push(fa.overflow())
    (error,) = await collect(provider, context())
    assert isinstance(error, ErrorEvent) and error.code == "context_length_exceeded"
    api.push(fa.usage_limit(resets_at=1767225600))
    (error,) = await collect(provider, context())
    assert isinstance(error, ErrorEvent) and (error.code, error.retryable) == ("quota_exceeded", False)
    assert error.resets_at == 1767225600 and "try again at 2026-01-01 00:00 UTC" in error.message
    api.push(fa.server_error())
    (error,) = await collect(provider, context())
    assert isinstance(error, ErrorEvent) and (error.code, error.retryable) == ("provider_unavailable", True)
    assert "127.0.0.1" not in error.message  # the CLI's own error text is not passed on
    api.push(fa.Reply((fa.Text("partial answer"), fa.Text("rest")), error_after_blocks=1), fa.text("resumed"))
    events = await collect(provider, context())
    assert isinstance(events[-1], ErrorEvent) and not any("resumed" in getattr(e, "delta", "") for e in events)
    if compatibility.parse_version(CLAUDE_VERSION) >= (2, 1, 250):
        assert "interrupted" in events[-1].message
    else:  # 2.1.225 gives up with an API error result instead (compatibility.MEASURED)
        assert events[-1].code == "provider_unavailable"
    assert_clean(runtime_dir)


@pytest.mark.anyio
async def test_without_the_test_option_an_api_key_is_refused(api, home, runtime_dir, tmp_path):
    """Production validation: an API-key login (here forced by a wrapper) is not a subscription."""
    wrapper = tmp_path / "claude-with-key"
    wrapper.write_text(
        f'#!/bin/sh\nANTHROPIC_BASE_URL={api.base_url} ANTHROPIC_API_KEY=sk-x exec "{CLAUDE}" "$@"\n'
    )
    wrapper.chmod(0o755)
    provider = ClaudeCodeProvider(str(wrapper), cwd=home, environ={"HOME": str(home), "PATH": os.environ["PATH"]})
    (error,) = await collect(provider, context("secret words"))
    assert isinstance(error, ErrorEvent) and error.code == "protocol_error" and "API key" in error.message
    assert api.messages_requests() == []  # nothing was sent anywhere
    assert_clean(runtime_dir)


# --- facts about this CLI version the transport depends on -----------------------------


def run_cli(api, home, tmp_path, stdin_lines, *, kill_on=None, extra=(), catalog_json=None):
    """Run the real CLI with the provider's argv; returns (records, exit status, marker path)."""
    catalog = build_catalog([ECHO], [])
    (tmp_path / "catalog.json").write_bytes(catalog_json if catalog_json is not None else catalog.to_json())
    (tmp_path / "system.txt").write_text("You are a test host.")
    marker = tmp_path / "violation.json"
    (tmp_path / "mcp.json").write_text(mcp_config(tmp_path / "catalog.json", marker, "hostlink"))
    argv = build_argv(str(CLAUDE), model="sonnet", system_prompt_file=tmp_path / "system.txt",
                      mcp_config_file=tmp_path / "mcp.json")  # fmt: skip
    (tmp_path / "tmp").mkdir()
    env = child_environment({"HOME": str(home), "PATH": os.environ["PATH"]},
                            ClaudeTransportOptions(test_api_base_url=api.base_url, test_api_key="sk-fake"),
                            temp_dir=tmp_path / "tmp")  # fmt: skip
    argv = anyio.run(preflight.checked_argv, argv, env)[0] + list(extra)  # as a request adapts it
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=env, cwd=home, start_new_session=True)  # fmt: skip
    records = []
    try:
        for line in stdin_lines:
            proc.stdin.write(json.dumps(line).encode() + b"\n")
        proc.stdin.close()
        for raw in proc.stdout:
            record = json.loads(raw)
            records.append(record)
            if kill_on is not None and kill_on(record):
                os.killpg(proc.pid, signal.SIGTERM)
                kill_on = None
        return records, proc.wait(timeout=60), marker
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        proc.stdout.close()


USER = {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "hi"}]}}


def test_cli_facts_init_and_stream_shapes(api, home, tmp_path):
    api.push(fa.text("Hello there"))
    records, status, _ = run_cli(api, home, tmp_path, [USER])
    kinds = [(r["type"], r.get("subtype")) for r in records]
    init_at = kinds.index(("system", "init"))
    assert set(kinds[:init_at]) <= {("system", "ui_invalidate")}  # only UI chatter before init
    assert kinds.count(("system", "init")) == 1
    init = records[init_at]
    assert init["tools"] == ["mcp__hostlink__echo"]
    # name and status are what init validation reads (2.1.332 adds "source": "dynamic", 2.1.250 has none)
    assert [(s["name"], s["status"]) for s in init["mcp_servers"]] == [("hostlink", "connected")]
    assert init["permissionMode"] == "dontAsk"
    assert (init["slash_commands"], init["skills"], init["plugins"]) == ([], [], [])  # plugins: off by settings
    assert init["apiKeySource"] == "ANTHROPIC_API_KEY"  # with the test option; a subscription shows "none"
    assert init["claude_code_version"] == CLAUDE_VERSION
    events = [r["event"]["type"] for r in records if r["type"] == "stream_event"]
    assert events == ["message_start", "content_block_start", "content_block_delta", "content_block_delta",
                      "content_block_stop", "message_delta", "message_stop"]  # fmt: skip
    assistant = [r for r in records if r["type"] == "assistant"]
    assert assistant and all(r["message"]["stop_reason"] is None for r in assistant)
    delta = next(r for r in records if r["type"] == "stream_event" and r["event"]["type"] == "message_delta")
    assert delta["event"]["delta"]["stop_reason"] == "end_turn"
    assert records[-1]["type"] == "result" and records[-1]["stop_reason"] == "end_turn"
    assert status == 0


def test_cli_facts_init_waits_for_the_first_user_message(api, home, tmp_path):
    """init comes only after a user message; the initialize control request is answered first."""
    control = {"type": "control_request", "request_id": "c1", "request": {"subtype": "initialize"}}
    records, _, _ = run_cli(api, home, tmp_path, [control])  # stdin closes without a user message
    assert not any(r["type"] == "system" and r.get("subtype") == "init" for r in records)
    (answer,) = [r for r in records if r["type"] == "control_response"]
    body = answer["response"]["response"]
    assert body["commands"] == [] and body["current_permission_mode"] == "dontAsk"
    assert body["account"]["apiKeySource"] == "ANTHROPIC_API_KEY" and body["account"]["apiProvider"] == "firstParty"
    assert api.messages_requests() == []


def test_cli_facts_dont_ask_denies_and_sigterm_exits_143(api, home, tmp_path):
    api.push(fa.tool_use("mcp__hostlink__echo", {"text": "x"}), fa.text("after"))
    records, _, marker = run_cli(api, home, tmp_path, [USER])
    denied = [r for r in records if r["type"] == "system" and r.get("subtype") == "permission_denied"]
    assert [r["tool_name"] for r in denied] == ["mcp__hostlink__echo"]
    assert not marker.exists()  # dontAsk: no tools/call reached the proposal server
    assert len(api.messages_requests()) == 1  # --max-turns 1: no follow-up request
    assert records[-1]["type"] == "result"
    assert [d["tool_name"] for d in records[-1]["permission_denials"]] == ["mcp__hostlink__echo"]

    api.push(fa.tool_use("mcp__hostlink__echo", {"text": "x"}))
    again = tmp_path / "again"
    again.mkdir()
    _, status, _ = run_cli(api, home, again, [USER], kill_on=is_message_delta)
    assert status == 143


def is_message_delta(record: dict) -> bool:
    return record["type"] == "stream_event" and record["event"]["type"] == "message_delta"


@pytest.mark.anyio
async def test_image_attachment_reaches_the_api_as_an_image(api, home, runtime_dir):
    png = base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
    )
    api.push(fa.text("A tiny image."))
    message = UserMessage([TextContent("look"), ImageContent(base64.b64encode(png).decode(), "image/png")])
    events = await collect(make_provider(api, home), context(messages=[message]))
    assert isinstance(events[-1], Done)
    (request,) = api.messages_requests()
    images = [block for m in request["messages"] if isinstance(m["content"], list) for block in m["content"]
              if block.get("type") == "image"]  # fmt: skip
    assert [base64.b64decode(block["source"]["data"]) for block in images] == [png]
    assert_clean(runtime_dir)


def test_cli_facts_a_failed_proposal_server_shows_in_init(api, home, tmp_path):
    """init lists catalog tools only once the server answered tools/list; a broken one fails init."""
    api.push(fa.text("no tools here"))
    records, _, _ = run_cli(api, home, tmp_path, [USER], catalog_json=b"{broken")
    init = next(r for r in records if r["type"] == "system" and r.get("subtype") == "init")
    assert init["tools"] == [] and init["mcp_servers"][0]["status"] == "failed"
    with pytest.raises(protocol.ProtocolError, match="MCP servers"):
        conversation.validate_init(init, conversation.Expectation(tools=(), mcp_servers=("hostlink",), testing=True))
