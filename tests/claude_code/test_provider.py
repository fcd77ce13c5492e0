"""The provider stream against the fake `claude`: the happy paths and every failure path."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import anyio
import pytest

from claude_transport_support import (
    DOTTED,
    ECHO,
    MODEL,
    OPENING,
    collect,
    context,
    live_processes_mentioning,
)
from hostlink.claude_code.catalog import build_catalog
from hostlink.host import CancelSignal, Done, ErrorEvent, TextDelta, ThinkingDelta, ToolCallEvent

pytestmark = pytest.mark.anyio


def alias_of(tool) -> str:
    return "mcp__hostlink__" + build_catalog([ECHO, DOTTED], []).alias_for(tool.name)


def only_error(events) -> ErrorEvent:
    assert [type(e) for e in events if not isinstance(e, (TextDelta, ThinkingDelta))] == [ErrorEvent], events
    return events[-1]


def assert_no_process(runtime_dir) -> None:
    assert live_processes_mentioning(str(runtime_dir)) == []


async def test_text_answer_streams_and_cleans_up(fake, runtime_dir):
    fake.script(
        *OPENING,
        {"op": "message", "blocks": [{"thinking": "pondering"}, {"text": "Hello"}, {"text": " world"}]},
        {"op": "result"},
    )
    events = await collect(fake.provider(), context("hi @you"))
    assert events[:3] == [ThinkingDelta("pondering"), TextDelta("Hello"), TextDelta(" world")]
    done = events[-1]
    assert isinstance(done, Done) and done.message.stop_reason == "stop"
    assert [part.type for part in done.message.content] == ["thinking", "text", "text"]
    usage = done.message.usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (5, 9, 3, 2)
    assert usage.cost == 0.0
    # The prompt went in as one user line: transcript records as text blocks, cache mark last.
    stdin = [json.loads(line) for line in fake.logged("stdin")]
    assert stdin[0] == {"type": "control_request", "request_id": "hostlink-init", "request": {"subtype": "initialize"}}
    blocks = stdin[1]["message"]["content"]
    assert stdin[1]["type"] == "user" and all(b["type"] == "text" for b in blocks)
    assert [("cache_control" in b) for b in blocks] == [False] * (len(blocks) - 1) + [True]
    assert "\\u0040you" in blocks[-1]["text"] and "@" not in blocks[-1]["text"]
    assert_no_process(runtime_dir)


async def test_argv_and_environment_are_the_reference_ones(fake, runtime_dir):
    fake.script(*OPENING, {"op": "message", "blocks": [{"text": "ok"}]}, {"op": "result"})
    parent = {
        "ANTHROPIC_API_KEY": "sk-secret", "ANTHROPIC_AUTH_TOKEN": "tok", "ANTHROPIC_BASE_URL": "http://evil",
        "CLAUDE_CODE_USE_BEDROCK": "1", "CLAUDE_CODE_USE_VERTEX": "1", "RANDOM_PARENT_VAR": "x",
        "LANG": "C.UTF-8", "HTTPS_PROXY": "http://proxy:3128",
    }  # fmt: skip
    await collect(fake.provider(parent), context())
    (env,) = fake.logged("env")
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "CLAUDE_CODE_USE_BEDROCK",
                 "CLAUDE_CODE_USE_VERTEX", "RANDOM_PARENT_VAR", "CLAUDE_CODE_MAX_RETRIES"):  # fmt: skip
        assert name not in env
    assert env["LANG"] == "C.UTF-8" and env["HTTPS_PROXY"] == "http://proxy:3128"
    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert env["CLAUDE_CODE_DISABLE_AUTO_MEMORY"] == "1"
    (argv,) = fake.logged("argv")
    assert argv[argv.index("--permission-mode") + 1] == "dontAsk"
    assert argv[argv.index("--tools") + 1] == "" and argv[argv.index("--tools") + 2].startswith("--")
    assert argv[argv.index("--model") + 1] == "sonnet"
    for flag in ("-p", "--strict-mcp-config", "--disable-slash-commands", "--no-session-persistence", "--verbose",
                 "--include-partial-messages"):  # fmt: skip
        assert flag in argv
    assert "--bare" not in argv and "--safe-mode" not in argv
    assert not any(not a.startswith("-") and argv[i - 1] in ("--tools", "-p") and a for i, a in enumerate(argv) if i)


async def test_tool_proposal_becomes_host_call_after_termination(fake, runtime_dir):
    fake.script(
        *OPENING,
        {"op": "message", "stop_reason": "tool_use", "blocks": [
            {"text": "reading"}, {"tool": alias_of(DOTTED), "id": "toolu_01", "input": {"path": "a.txt"}}]},
        {"op": "wait_signal"},
    )  # fmt: skip
    events = await collect(fake.provider(), context(tools=(ECHO, DOTTED)))
    assert events[0] == TextDelta("reading")
    call_event, done = events[1:]
    assert isinstance(call_event, ToolCallEvent)
    assert (call_event.tool_call.id, call_event.tool_call.name) == ("toolu_01", "files.read")
    assert call_event.tool_call.arguments == {"path": "a.txt"}
    assert isinstance(done, Done) and done.message.stop_reason == "toolUse"
    assert done.message.content[-1] == call_event.tool_call
    assert_no_process(runtime_dir)


async def test_a_proposal_tool_missing_from_init_is_the_requests_schema_refused(fake, runtime_dir):
    """The CLI drops a tool whose input schema it does not accept: the request's fault, named."""
    fake.script(*OPENING[:2], {"op": "init", "override": {"tools": []}},
                {"op": "message", "blocks": [{"text": "leak"}]}, {"op": "result"})  # fmt: skip
    events = await collect(fake.provider(), context())
    error = only_error(events)
    assert error.code == "invalid_request" and "did not accept the input schema of tool echo" in error.message
    assert not any(isinstance(e, TextDelta) for e in events)
    assert_no_process(runtime_dir)


@pytest.mark.parametrize(
    ("override", "wording"),
    [
        ({"tools": ["mcp__hostlink__echo", "Bash"]}, "tool inventory"),
        ({"mcp_servers": [{"name": "hostlink", "status": "connected"}, {"name": "other", "status": "connected"}]},
         "MCP servers"),
        ({"mcp_servers": [{"name": "hostlink", "status": "failed"}]}, "MCP servers"),
        ({"permissionMode": "default"}, "dontAsk"),
        ({"plugins": [{"name": "cc-plugin-agents-md", "path": "builtin"}]}, "plugins"),
        ({"skills": ["pdf"]}, "skills"),
        ({"slash_commands": ["review"]}, "slash commands"),
        ({"apiKeySource": "ANTHROPIC_API_KEY"}, "API key"),
    ],
)
async def test_bad_init_inventory_fails_before_content(fake, runtime_dir, override, wording):
    fake.script(*OPENING[:2], {"op": "init", "override": override}, {"op": "message", "blocks": [{"text": "leak"}]},
                {"op": "result"})  # fmt: skip
    events = await collect(fake.provider(), context())
    error = only_error(events)
    assert error.code == "protocol_error" and wording in error.message
    assert not any(isinstance(e, TextDelta) for e in events)
    assert_no_process(runtime_dir)


@pytest.mark.parametrize(
    ("control", "wording", "code"),
    [
        ({"account": {"apiKeySource": "ANTHROPIC_API_KEY"}}, "API key", "protocol_error"),
        ({"account": {"tokenSource": "none"}}, "subscription", "not_signed_in"),
        ({"account": {"apiProvider": "bedrock"}}, "third-party", "protocol_error"),
        ({"commands": [{"name": "review"}]}, "slash commands", "protocol_error"),
        ({"permission_mode": "default"}, "dontAsk", "protocol_error"),
    ],
)
async def test_bad_account_fails_before_the_prompt_is_written(fake, runtime_dir, control, wording, code):
    fake.script({"op": "control", **control}, {"op": "read_user"}, {"op": "init"}, {"op": "result"})
    error = only_error(await collect(fake.provider(), context("secret prompt")))
    assert error.code == code and wording in error.message
    assert not any("secret prompt" in line for line in fake.logged("stdin"))


async def test_ui_chatter_before_init_is_passed_over(fake, runtime_dir):
    chatter = {"op": "emit", "record": {"type": "system", "subtype": "ui_invalidate"}}
    fake.script(chatter, {"op": "control"}, {"op": "read_user"}, chatter, {"op": "init"},
                {"op": "message", "blocks": [{"text": "answered"}]}, {"op": "result"})
    events = await collect(fake.provider(), context())
    assert [e.delta for e in events if isinstance(e, TextDelta)] == ["answered"] and isinstance(events[-1], Done)


async def test_output_before_init_is_a_protocol_error(fake, runtime_dir):
    fake.script({"op": "control"}, {"op": "read_user"}, {"op": "message", "blocks": [{"text": "early"}]},
                {"op": "init"})
    events = await collect(fake.provider(), context())
    assert only_error(events).code == "protocol_error" and not any(isinstance(e, TextDelta) for e in events)


async def test_output_before_the_control_answer_is_a_protocol_error(fake, runtime_dir):
    fake.script({"op": "emit", "record": {"type": "assistant", "message": {}}}, {"op": "control"})
    assert only_error(await collect(fake.provider(), context())).code == "protocol_error"


async def test_second_init_is_a_protocol_error(fake, runtime_dir):
    fake.script(*OPENING, {"op": "emit", "record": {"type": "system", "subtype": "init"}},
                {"op": "message", "blocks": [{"text": "x"}]}, {"op": "result"})  # fmt: skip
    error = only_error(await collect(fake.provider(), context()))
    assert error.code == "protocol_error" and "second init" in error.message


async def test_non_json_output_is_a_protocol_error(fake, runtime_dir):
    fake.script(*OPENING, {"op": "raw", "text": "this is not json"})
    assert only_error(await collect(fake.provider(), context())).code == "protocol_error"


@pytest.mark.parametrize("when", ["before init", "mid message"])
async def test_unexpected_exit(fake, runtime_dir, when):
    if when == "before init":
        fake.script({"op": "control"}, {"op": "read_user"}, {"op": "exit", "code": 3})
    else:
        fake.script(*OPENING, {"op": "message", "stop_reason": None, "blocks": [{"text": "half"}]},
                    {"op": "exit", "code": 1})
    error = only_error(await collect(fake.provider(), context()))
    assert error.code == "unexpected_exit"
    assert_no_process(runtime_dir)


async def test_missing_executable_is_unavailable(fake, runtime_dir):
    provider = fake.provider()
    provider.executable = str(fake.home / "no-such-claude")
    assert only_error(await collect(provider, context())).code == "unavailable"


@pytest.mark.parametrize(
    "block",
    [
        {"raw": '{"path": "a.txt"'},  # truncated JSON
        {"raw": "[1, 2]"},  # not an object
        {"raw": '{"a": NaN}'},  # not strict JSON
        {"raw": '{"a": 1, "a": 2}'},  # duplicate key
    ],
)
async def test_malformed_proposal_fails(fake, runtime_dir, block):
    fake.script(*OPENING,
                {"op": "message", "stop_reason": "tool_use", "blocks": [{"tool": "mcp__hostlink__echo", **block}]},
                {"op": "wait_signal"})  # fmt: skip
    events = await collect(fake.provider(), context())
    assert only_error(events).code == "protocol_error"
    assert not any(isinstance(e, ToolCallEvent) for e in events)
    assert_no_process(runtime_dir)


@pytest.mark.parametrize("name", ["Bash", "mcp__hostlink__nope", "mcp__other__echo"])
async def test_unknown_tool_fails(fake, runtime_dir, name):
    fake.script(*OPENING, {"op": "message", "stop_reason": "tool_use", "blocks": [{"tool": name, "input": {}}]},
                {"op": "wait_signal"})  # fmt: skip
    assert only_error(await collect(fake.provider(), context())).code == "unknown_tool"
    assert_no_process(runtime_dir)


async def test_execution_attempt_fails_the_request(fake, runtime_dir):
    fake.script(
        *OPENING,
        {"op": "call_tool", "name": "echo"},
        {"op": "message", "stop_reason": "tool_use",
         "blocks": [{"tool": "mcp__hostlink__echo", "input": {"text": "x"}}]},
        {"op": "wait_signal"},
    )
    events = await collect(fake.provider(), context())
    assert only_error(events).code == "tool_execution_attempted"
    (answer,) = fake.logged("tools/call")
    assert "error" in answer and "result" not in answer
    assert_no_process(runtime_dir)


async def test_execution_attempt_fails_a_text_answer_too(fake, runtime_dir):
    fake.script(*OPENING, {"op": "call_tool", "name": "echo"}, {"op": "message", "blocks": [{"text": "done"}]},
                {"op": "result"})  # fmt: skip
    assert only_error(await collect(fake.provider(), context())).code == "tool_execution_attempted"


@pytest.mark.parametrize("where", ["text", "split text", "thinking", "arguments"])
async def test_private_path_disclosure_fails(fake, runtime_dir, where):
    if where == "text":
        message = {"op": "message", "blocks": [{"text": "see $PRIVATE/system-prompt.txt"}]}
    elif where == "split text":
        message = {"op": "message", "blocks": [{"text": "see $PRIVATE/system-prompt.txt", "split_private": True}]}
    elif where == "thinking":
        message = {"op": "message", "blocks": [{"thinking": "the file $PRIVATE/catalog.json"}]}
    else:
        message = {"op": "message", "stop_reason": "tool_use",
                   "blocks": [{"tool": "mcp__hostlink__echo", "input": {"text": "$PRIVATE/catalog.json"}}]}  # fmt: skip
    fake.script(*OPENING, message, {"op": "result"}, {"op": "wait_signal"})
    events = await collect(fake.provider(), context())
    assert only_error(events).code == "private_path_disclosed"
    assert not any(isinstance(e, ToolCallEvent) for e in events)
    if where == "split text":
        assert len([e for e in events if isinstance(e, TextDelta)]) == 1  # the second half never went out
    assert_no_process(runtime_dir)


async def test_cancelled_before_launch_starts_nothing(fake, runtime_dir):
    fake.script(*OPENING, {"op": "message", "blocks": [{"text": "x"}]}, {"op": "result"})
    signal = CancelSignal()
    signal.cancel()
    error = only_error(await collect(fake.provider(), context(), signal))
    assert error.code == "aborted"
    assert fake.log() == []  # the fake never ran


async def test_cancelled_during_the_answer_terminates_the_group(fake, runtime_dir):
    fake.script(*OPENING, {"op": "linger"}, {"op": "message", "stop_reason": None, "blocks": [{"text": "first"}]},
                {"op": "wait_signal"})  # fmt: skip
    signal = CancelSignal()
    events = []
    async for event in fake.provider().stream(MODEL, context(), signal):
        events.append(event)
        if event == TextDelta("first"):
            signal.cancel()
    assert only_error(events).code == "aborted"
    (lingering,) = fake.logged("linger")
    assert live_processes_mentioning(str(runtime_dir)) == []
    assert not _alive(lingering)


async def test_cancelled_while_waiting_for_output(fake, runtime_dir):
    fake.script(*OPENING, {"op": "wait_signal"})
    signal = CancelSignal()

    async def cancel_soon():
        while not fake.logged("stdin")[1:]:
            await anyio.sleep(0.02)
        signal.cancel()

    async with anyio.create_task_group() as group:
        group.start_soon(cancel_soon)
        events = await collect(fake.provider(), context(), signal)
    assert only_error(events).code == "aborted"
    assert_no_process(runtime_dir)


async def test_sigterm_ignored_escalates_to_sigkill(fake, runtime_dir):
    fake.script(*OPENING,
                {"op": "message", "stop_reason": "tool_use", "blocks": [{"tool": "mcp__hostlink__echo", "input": {}}]},
                {"op": "wait_signal", "ignore_term": True})  # fmt: skip
    events = await collect(fake.provider(), context())
    assert isinstance(events[-1], Done) and events[-1].message.stop_reason == "toolUse"
    assert_no_process(runtime_dir)


async def test_cleanup_failure_fails_the_request(fake, runtime_dir):
    fake.script(*OPENING, {"op": "message", "blocks": [{"text": "fine"}]}, {"op": "sabotage"}, {"op": "result"})
    events = await collect(fake.provider(), context())
    assert only_error(events).code == "cleanup_failed"
    for leftover in runtime_dir.iterdir():  # the sabotaged directory is the test's to remove
        (shutil.rmtree if leftover.is_dir() else leftover.__class__.unlink)(leftover)


@pytest.mark.parametrize(
    "steps",
    [
        [{"op": "message", "stop_reason": None, "blocks": [{"text": "part"}]},
         {"op": "emit", "record": {"type": "stream_event", "event": {"type": "message_stop"},
                                   "abandoned_blocks": {"from_block_index": 0}}}],
        [{"op": "message", "stop_reason": None, "blocks": [{"text": "part"}]},
         {"op": "emit", "record": {"type": "system", "subtype": "api_retry", "attempt": 1}}],
        [{"op": "message", "stop_reason": None, "blocks": []},
         {"op": "message", "id": "msg_other", "blocks": [{"text": "again"}]}],
    ],
    ids=["abandoned", "retry-after-content", "second-message"],
)  # fmt: skip
async def test_interrupted_stream_fails(fake, runtime_dir, steps):
    fake.script(*OPENING, *steps, {"op": "result"})
    error = only_error(await collect(fake.provider(), context()))
    assert error.code == "protocol_error" and "interrupted" in error.message


@pytest.mark.parametrize(
    ("fields", "code", "retryable"),
    [
        ({"terminal_reason": "prompt_too_long", "result": "Prompt is too long"}, "context_length_exceeded", False),
        ({"api_error_status": 429, "result": "API Error: Claude AI usage limit reached|1767225600"},
         "quota_exceeded", False),
        ({"api_error_status": 429, "api_error_type": "rate_limit_error", "result": "slow down"},
         "rate_limited", True),
        ({"api_error_status": 500, "api_error_type": "api_error", "result": "API Error: 500"},
         "provider_unavailable", True),
    ],
)
async def test_api_errors_are_errors_never_text(fake, runtime_dir, fields, code, retryable):
    synthetic = {"type": "assistant", "is_api_error_message": True, "error": "x",
                 "message": {"model": "<synthetic>",
                             "content": [{"type": "text", "text": fields["result"]}]}}  # fmt: skip
    fake.script(*OPENING, {"op": "emit", "record": {**synthetic, **fields}},
                {"op": "result", "fields": {"is_error": True, **fields}}, {"op": "exit", "code": 1})  # fmt: skip
    events = await collect(fake.provider(), context())
    error = only_error(events)
    assert (error.code, error.retryable) == (code, retryable)
    assert fields["result"] not in error.message
    if code == "quota_exceeded":  # the reset time the API gave, for a person and for a retry
        assert error.resets_at == 1767225600 and "at 2026-01-01 00:00 UTC" in error.message


async def test_rate_limit_events_become_plan_reports_unknown_fields_ignored(fake, runtime_dir):
    limited = {"type": "rate_limit_event",
               "rate_limit_info": {"status": "allowed_warning", "rateLimitType": "five_hour",
                                   "resetsAt": 1767225600, "extra": "\x1b[31m" * 500,
                                   "unifiedWindows": {"five_hour": {"utilization": 0.91},
                                                      "Bad Name": {"utilization": 1}}}}
    unreadable = {"type": "rate_limit_event", "rate_limit_info": {"status": "\x1b[31m"}}
    allowed = {"type": "rate_limit_event", "rate_limit_info": {"status": "allowed", "newField": {"x": 1}}}
    fake.script(*OPENING, {"op": "emit", "record": limited}, {"op": "emit", "record": unreadable},
                {"op": "emit", "record": allowed}, {"op": "message", "blocks": [{"text": "ok"}]}, {"op": "result"})
    provider = fake.provider()
    reports = []
    provider.on_plan = reports.append
    events = await collect(provider, context())
    assert isinstance(events[-1], Done) and fake.notices == []
    assert [(r.status, r.window, r.resets_at) for r in reports] == [("allowed_warning", "five_hour", 1767225600),
                                                                   ("allowed", None, None)]
    assert [(w.name, w.utilization) for w in reports[0].windows] == [("five_hour", 0.91)]


async def test_permission_request_from_claude_fails(fake, runtime_dir):
    fake.script(*OPENING, {"op": "emit", "record": {"type": "control_request", "request_id": "1",
                                                    "request": {"subtype": "can_use_tool", "tool_name": "Bash"}}},
                {"op": "wait_signal"})  # fmt: skip
    assert only_error(await collect(fake.provider(), context())).code == "protocol_error"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in (b"Z", b"X")



async def test_cancel_from_another_thread(fake, runtime_dir):
    fake.script(*OPENING, {"op": "message", "stop_reason": None, "blocks": [{"text": "first"}]}, {"op": "wait_signal"})
    signal = CancelSignal()
    events = []
    async for event in fake.provider().stream(MODEL, context(), signal):
        events.append(event)
        if event == TextDelta("first"):
            await anyio.to_thread.run_sync(signal.cancel)
    assert only_error(events).code == "aborted"
    assert_no_process(runtime_dir)


async def test_consumer_that_stops_early_leaves_nothing(fake, runtime_dir):
    fake.script(*OPENING, {"op": "message", "stop_reason": None, "blocks": [{"text": "first"}]}, {"op": "wait_signal"})
    stream = fake.provider().stream(MODEL, context(), CancelSignal())
    assert await stream.__anext__() == TextDelta("first")
    await stream.aclose()
    assert_no_process(runtime_dir)


async def test_silent_claude_times_out(fake, runtime_dir, monkeypatch):
    from hostlink.claude_code import provider as provider_module

    monkeypatch.setattr(provider_module, "STARTUP_TIMEOUT_SECONDS", 0.5)
    fake.script({"op": "wait_signal"})
    error = only_error(await collect(fake.provider(), context()))
    assert (error.code, error.retryable) == ("timeout", True)
    assert_no_process(runtime_dir)


async def test_claude_compacting_the_conversation_fails(fake, runtime_dir):
    fake.script(*OPENING, {"op": "emit", "record": {"type": "system", "subtype": "compact_boundary"}},
                {"op": "message", "blocks": [{"text": "summary"}]}, {"op": "result"})  # fmt: skip
    error = only_error(await collect(fake.provider(), context()))
    assert error.code == "protocol_error" and "compacted" in error.message


async def test_cancel_while_claude_does_not_read_a_large_prompt(fake, runtime_dir):
    fake.script({"op": "control"}, {"op": "wait_signal"})  # never reads the user message
    signal = CancelSignal()

    async def cancel_when_blocked():
        while len(fake.logged("stdin")) < 1:
            await anyio.sleep(0.02)
        await anyio.sleep(0.3)
        signal.cancel()

    async with anyio.create_task_group() as group:
        group.start_soon(cancel_when_blocked)
        events = await collect(fake.provider(), context("x" * 4_000_000), signal)
    assert only_error(events).code == "aborted"
    assert_no_process(runtime_dir)


async def test_unusable_private_root_is_an_error_event(fake, tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    monkeypatch.setenv("HOSTLINK_RUNTIME_DIR", str(blocker))
    fake.script(*OPENING, {"op": "message", "blocks": [{"text": "x"}]}, {"op": "result"})
    assert only_error(await collect(fake.provider(), context())).code == "private_state"
    assert fake.log() == []


async def test_max_tokens_stops_claude_and_reports_length(fake, runtime_dir):
    fake.script(*OPENING, {"op": "message", "stop_reason": "max_tokens", "blocks": [{"text": "cut"}]},
                {"op": "wait_signal"})  # fmt: skip
    events = await collect(fake.provider(), context())
    assert events[0] == TextDelta("cut")
    assert isinstance(events[-1], Done) and events[-1].message.stop_reason == "length"
    assert_no_process(runtime_dir)


async def test_max_tokens_with_a_proposal_fails(fake, runtime_dir):
    fake.script(*OPENING,
                {"op": "message", "stop_reason": "max_tokens",
                 "blocks": [{"tool": "mcp__hostlink__echo", "input": {}}]},
                {"op": "wait_signal"})  # fmt: skip
    events = await collect(fake.provider(), context())
    assert only_error(events).code == "length"
    assert not any(isinstance(e, ToolCallEvent) for e in events)


@pytest.mark.parametrize("reason", ["refusal", "pause_turn"])
async def test_unsupported_stop_reason_fails(fake, runtime_dir, reason):
    fake.script(*OPENING, {"op": "message", "stop_reason": reason, "blocks": [{"text": "no"}]}, {"op": "result"})
    assert only_error(await collect(fake.provider(), context())).code == "provider_error"


async def test_tool_use_stop_without_a_proposal_fails(fake, runtime_dir):
    fake.script(*OPENING, {"op": "message", "stop_reason": "tool_use", "blocks": [{"text": "hm"}]},
                {"op": "wait_signal"})
    assert only_error(await collect(fake.provider(), context())).code == "protocol_error"
