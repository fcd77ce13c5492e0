"""Prewarmed follow-up children: a request that ends with tool calls has the session start the
next `claude` at once; the next request uses it when it matches, and otherwise, after its
idle bound or at shutdown it is stopped with its group and private directory.

The real CLI runs against the fake Anthropic API (through the extension and a host session,
which own the prewarmed child); the fake `claude` shows the guarantees that hold for a
prewarmed child as for any other (environment allowlist, init validation, disclosure guard).
"""

from __future__ import annotations

import os
import sys
import time

import anyio
import pytest

from claude_transport_support import (
    DOTTED,
    ECHO,
    FAKES,
    MODEL,
    OPENING,
    FakeClaude,
    context,
    live_processes_mentioning,
)
from host_support import Notices
from hostlink.claude_code import metrics, prewarm
from hostlink.claude_code.catalog import build_catalog
from hostlink.claude_code.extension import ClaudeCodeExtension
from hostlink.claude_code.process import ClaudeTransportOptions
from hostlink.host import (
    CancelSignal,
    Done,
    ErrorEvent,
    TextContent,
    TextDelta,
    ToolResultMessage,
)
from hostlink.host.private import MARKER
from hostlink.host.session import HostSession

sys.path.insert(0, str(FAKES))
import fake_anthropic as fa

from peers import CLAUDE_BIN, requires_claude

pytestmark = pytest.mark.anyio



def request_dirs(runtime_dir) -> list:
    if not runtime_dir.exists():
        return []
    return sorted(p for p in runtime_dir.iterdir() if p.name.startswith("claude-request-"))


async def settled(runtime_dir, seconds: float = 10.0) -> None:
    """Wait (bounded) until no request directory and no process of one is left."""
    with anyio.move_on_after(seconds):
        while request_dirs(runtime_dir) or live_processes_mentioning(str(runtime_dir)):
            await anyio.sleep(0.05)
    assert request_dirs(runtime_dir) == [] and live_processes_mentioning(str(runtime_dir)) == []


async def warm_child(runtime_dir):
    """The one prewarmed child's directory, once its process runs (the start is in the background)."""
    with anyio.fail_after(10):
        while not (dirs := request_dirs(runtime_dir)) or not live_processes_mentioning(str(dirs[0])):
            await anyio.sleep(0.02)
    (warm,) = dirs
    return warm


async def started_host(extension, cwd, lasting=True) -> HostSession:
    host = HostSession([extension], lasting=lasting)
    await host.start(cwd=cwd, project_trusted=False, notifier=Notices())
    return host


async def stream(host: HostSession, ctx) -> list:
    return [event async for event in host.stream("claude-code", MODEL, ctx, CancelSignal())]


def follow_up(first, done, call_id: str, tools=(ECHO,)):
    result = ToolResultMessage(tool_call_id=call_id, tool_name="echo", content=[TextContent("hi")])
    return context(messages=[*first.messages, done.message, result], tools=tools)


# --- the real CLI ----------------------------------------------------------------------


def real_extension(api, home) -> ClaudeCodeExtension:
    return ClaudeCodeExtension(
        options=ClaudeTransportOptions(test_api_base_url=api.base_url, test_api_key="sk-fake-test"),
        environ={"HOME": str(home), "PATH": f"{CLAUDE_BIN}:{os.environ['PATH']}"},
    )


async def propose(host, api, call_id="toolu_pw_1", tools=(ECHO,)):
    api.push(fa.Reply((fa.ToolUse("mcp__hostlink__echo", {"text": "hi"}, id=call_id),), stop_reason="tool_use"))
    first = context("echo hi", tools=tools)
    events = await stream(host, first)
    assert isinstance(events[-1], Done) and events[-1].message.stop_reason == "toolUse"
    return first, events[-1]


def user_blocks(request: dict) -> list[dict]:
    return next(m for m in request["messages"] if m["role"] == "user")["content"]


@pytest.mark.slow
@requires_claude
async def test_a_matching_follow_up_uses_the_prewarmed_child(api, home, runtime_dir):
    host = await started_host(real_extension(api, home), home)
    try:
        first, done = await propose(host, api)
        assert (metrics.last()["prewarmed_waiting"], metrics.last()["prewarm_slots"]) == (1, 1)
        assert done.prewarmed_waiting == 1
        warm = await warm_child(runtime_dir)  # the request's own directory is gone; this one waits
        # Only what a start reads (and the marker, stderr, TMPDIR): no prompt, no attachment.
        assert {p.name for p in warm.iterdir()} == {MARKER, "catalog.json", "mcp.json", "stderr.log",
                                                    "system-prompt.txt", "tmp"}  # fmt: skip
        api.push(fa.text("The echo said hi."))
        events = await stream(host, follow_up(first, done, "toolu_pw_1"))
        assert "".join(e.delta for e in events if isinstance(e, TextDelta)) == "The echo said hi."
        assert isinstance(events[-1], Done) and events[-1].message.stop_reason == "stop"
        assert metrics.last()["child"] == "prewarmed" and metrics.last()["prewarmed_waiting"] == 0
        assert events[-1].prewarmed and events[-1].prewarmed_waiting == 0
        before, after = (user_blocks(r) for r in api.messages_requests())
        assert len(after) == len(before) + 2  # the prewarmed child got the whole follow-up transcript
        assert not warm.exists() and live_processes_mentioning(str(warm)) == []
        await settled(runtime_dir)  # the child it started ahead (it answered tool results) is stopped: the loop ended
    finally:
        await host.shutdown()
    (runtime_dir / metrics.FILE_NAME).unlink()


@pytest.mark.slow
@requires_claude
async def test_a_follow_up_that_does_not_match_stops_it_and_starts_fresh(api, home, runtime_dir):
    host = await started_host(real_extension(api, home), home)
    try:
        first, done = await propose(host, api)
        warm = await warm_child(runtime_dir)
        # Other tools: the prewarmed child's catalog is not this request's. This one proposes again.
        api.push(fa.Reply((fa.ToolUse("mcp__hostlink__echo", {"text": "again"}, id="toolu_pw_2"),),
                          stop_reason="tool_use"))  # fmt: skip
        events = await stream(host, follow_up(first, done, "toolu_pw_1", tools=(ECHO, DOTTED)))
        assert isinstance(events[-1], Done) and events[-1].message.stop_reason == "toolUse"
        assert metrics.last()["child"] == "replaced"
        offered = {tool["name"] for tool in api.messages_requests()[-1]["tools"] if not tool.get("defer_loading")}
        assert offered == set(build_catalog([ECHO, DOTTED], []).tool_names())  # a fresh child, this request's tools
        with anyio.fail_after(10):
            while warm.exists() or live_processes_mentioning(str(warm)):
                await anyio.sleep(0.05)
        assert await warm_child(runtime_dir) != warm  # at most one prewarmed child: the new one
    finally:
        await host.shutdown()
    await settled(runtime_dir, seconds=0)
    (runtime_dir / metrics.FILE_NAME).unlink()


@pytest.mark.slow
@requires_claude
async def test_shutdown_stops_the_prewarmed_child(api, home, runtime_dir):
    host = await started_host(real_extension(api, home), home)
    try:
        await propose(host, api)
        await warm_child(runtime_dir)
    finally:
        await host.shutdown()
    await settled(runtime_dir, seconds=0)  # gone when shutdown returns, not later
    assert len(api.messages_requests()) == 1  # the prewarmed child never sent anything
    (runtime_dir / metrics.FILE_NAME).unlink()


@pytest.mark.slow
@requires_claude
async def test_an_unused_prewarmed_child_is_stopped_after_its_idle_bound(api, home, runtime_dir, monkeypatch):
    monkeypatch.setattr(prewarm, "IDLE_SECONDS", 2.0)
    host = await started_host(real_extension(api, home), home)
    try:
        first, done = await propose(host, api)
        stopped_by = time.monotonic() + 2.0
        await warm_child(runtime_dir)
        await settled(runtime_dir)
        assert time.monotonic() >= stopped_by - 0.5
        api.push(fa.text("late answer"))
        events = await stream(host, follow_up(first, done, "toolu_pw_1"))
        assert isinstance(events[-1], Done) and metrics.last()["child"] == "fresh"
    finally:
        await host.shutdown()
    await settled(runtime_dir, seconds=0)
    (runtime_dir / metrics.FILE_NAME).unlink()


# --- the fake claude: the guarantees a prewarmed child keeps -----------------------------

PROPOSAL = [*OPENING, {"op": "message", "stop_reason": "tool_use",
                       "blocks": [{"tool": "mcp__hostlink__echo", "id": "toolu_f1", "input": {"text": "x"}}]},
            {"op": "wait_signal"}]  # fmt: skip


def fake_extension(fake: FakeClaude, **extra_env: str) -> ClaudeCodeExtension:
    environ = {"HOME": str(fake.home), "PATH": f"{fake.executable.parent}:{os.environ['PATH']}",
               "CLAUDE_CONFIG_DIR": str(fake.config_dir), **extra_env}  # fmt: skip
    return ClaudeCodeExtension(environ=environ)


async def fake_round(fake, runtime_dir, second_run, **extra_env):
    """A proposal, then the follow-up on the prewarmed child running `second_run`."""
    fake.script_runs(PROPOSAL, second_run)
    host = await started_host(fake_extension(fake, **extra_env), fake.home)
    try:
        first = context("echo x")
        done = (await stream(host, first))[-1]
        assert isinstance(done, Done) and done.message.stop_reason == "toolUse"
        events = await stream(host, follow_up(first, done, "toolu_f1"))
    finally:
        await host.shutdown()
    await settled(runtime_dir, seconds=0)
    (runtime_dir / metrics.FILE_NAME).unlink()
    return events


async def test_a_prewarmed_child_gets_only_the_allowlisted_environment(tmp_path, runtime_dir):
    fake = FakeClaude(tmp_path)
    answer = [*OPENING, {"op": "message", "blocks": [{"text": "fine"}]}, {"op": "result"}]
    events = await fake_round(fake, runtime_dir, answer, ANTHROPIC_API_KEY="sk-parent-secret",
                              ANTHROPIC_BASE_URL="http://evil.example", SOMETHING_ELSE="x")
    assert isinstance(events[-1], Done)
    envs = fake.logged("env")  # and a third: the loop's next child, started ahead by the follow-up
    warm_env = envs[1]
    for env in envs:
        assert not {"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "SOMETHING_ELSE"} & set(env)
        assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    warm_private = os.path.dirname(fake.logged("argv")[1][fake.logged("argv")[1].index("--system-prompt-file") + 1])
    assert warm_env["TMPDIR"] == os.path.join(warm_private, "tmp")


async def test_a_prewarmed_child_with_a_wrong_inventory_fails_the_request(tmp_path, runtime_dir):
    fake = FakeClaude(tmp_path)
    wrong = [{"op": "control"}, {"op": "read_user"}, {"op": "init", "override": {"tools": ["Bash"]}},
             {"op": "wait_signal"}]  # fmt: skip
    (error,) = await fake_round(fake, runtime_dir, wrong)
    assert isinstance(error, ErrorEvent) and error.code == "protocol_error" and "inventory" in error.message


async def test_a_prewarmed_child_that_names_its_private_directory_fails_the_request(tmp_path, runtime_dir):
    fake = FakeClaude(tmp_path)
    leak = [*OPENING, {"op": "message", "blocks": [{"text": "see $PRIVATE/catalog.json"}]}, {"op": "result"}]
    events = await fake_round(fake, runtime_dir, leak)
    assert isinstance(events[-1], ErrorEvent) and events[-1].code == "private_path_disclosed"


async def test_a_prewarmed_child_refused_at_initialize_never_serves(tmp_path, runtime_dir):
    """Its start failed (here: not signed in): it is stopped, and a fresh child serves."""
    fake = FakeClaude(tmp_path)
    refused = [{"op": "control", "account": {"tokenSource": "none"}}, {"op": "wait_signal"}]
    answer = [*OPENING, {"op": "message", "blocks": [{"text": "fresh"}]}, {"op": "result"}]
    fake.script_runs(PROPOSAL, refused, answer)
    host = await started_host(fake_extension(fake), fake.home)
    try:
        first = context("echo x")
        done = (await stream(host, first))[-1]
        await settled(runtime_dir)  # the refused child is stopped on its own
        events = await stream(host, follow_up(first, done, "toolu_f1"))
        assert [e.delta for e in events if isinstance(e, TextDelta)] == ["fresh"]
        assert metrics.last()["child"] != "prewarmed"
    finally:
        await host.shutdown()
    await settled(runtime_dir, seconds=0)
    (runtime_dir / metrics.FILE_NAME).unlink()


async def test_a_one_shot_session_prewarms_nothing(tmp_path, runtime_dir):
    fake = FakeClaude(tmp_path)
    fake.script(*PROPOSAL)
    host = await started_host(fake_extension(fake), fake.home, lasting=False)
    try:
        done = (await stream(host, context("echo x")))[-1]
        assert isinstance(done, Done) and done.message.stop_reason == "toolUse"
        await anyio.sleep(0.2)
        assert request_dirs(runtime_dir) == [] and len(fake.logged("argv")) == 1
    finally:
        await host.shutdown()
    (runtime_dir / metrics.FILE_NAME).unlink()


async def test_a_follow_up_asked_at_once_waits_for_the_prewarmed_start(tmp_path, runtime_dir):
    fake = FakeClaude(tmp_path)
    slow = [{"op": "sleep", "seconds": 0.5}, *OPENING, {"op": "message", "blocks": [{"text": "warm"}]},
            {"op": "result"}]  # fmt: skip
    events = await fake_round(fake, runtime_dir, slow)
    assert [e.delta for e in events if isinstance(e, TextDelta)] == ["warm"]
    # The follow-up waited for the prewarmed child (its script answered "warm"), and started at
    # most the loop's next one ahead of its own prompt: no fresh child of its own.
    assert len(fake.logged("argv")) <= 3


async def test_a_request_cancelled_while_the_prewarmed_child_starts_stops_it(tmp_path, runtime_dir):
    fake = FakeClaude(tmp_path)
    fake.script_runs(PROPOSAL, [{"op": "sleep", "seconds": 30}, *OPENING])
    host = await started_host(fake_extension(fake), fake.home)
    try:
        first = context("echo x")
        done = (await stream(host, first))[-1]
        signal = CancelSignal()
        events = []

        async def follow() -> None:
            async for event in host.stream("claude-code", MODEL, follow_up(first, done, "toolu_f1"), signal):
                events.append(event)

        with anyio.fail_after(10):
            async with anyio.create_task_group() as group:
                group.start_soon(follow)
                await anyio.sleep(0.3)  # the follow-up now waits for the prewarmed child's start
                signal.cancel("the user stopped it")
        assert [e.code for e in events] == ["aborted"]
        await settled(runtime_dir)  # the prewarmed child is stopped, not left for its idle bound
        assert len(fake.logged("argv")) == 2
    finally:
        await host.shutdown()
    (runtime_dir / metrics.FILE_NAME).unlink()


async def test_shutdown_waits_for_a_prewarmed_child_still_being_stopped(tmp_path, runtime_dir):
    """A mismatch stops the prewarmed child in the background; this one ignores SIGTERM, so
    stopping it takes the SIGKILL grace, and shutdown right after still leaves nothing."""
    fake = FakeClaude(tmp_path)
    stubborn = [{"op": "control"}, {"op": "wait_signal", "ignore_term": True}]
    answer = [*OPENING, {"op": "message", "blocks": [{"text": "fresh"}]}, {"op": "result"}]
    fake.script_runs(PROPOSAL, stubborn, answer)
    host = await started_host(fake_extension(fake), fake.home)
    try:
        first = context("echo x")
        done = (await stream(host, first))[-1]
        with anyio.fail_after(10):  # the prewarmed fake runs its script: it read the control request
            while len(fake.logged("stdin")) < 3:
                await anyio.sleep(0.02)
        events = await stream(host, follow_up(first, done, "toolu_f1", tools=(ECHO, DOTTED)))
        assert [e.delta for e in events if isinstance(e, TextDelta)] == ["fresh"]
        assert metrics.last()["child"] == "replaced"
    finally:
        await host.shutdown()
    await settled(runtime_dir, seconds=0)
    (runtime_dir / metrics.FILE_NAME).unlink()


def test_a_prewarmer_without_a_slot_is_refused():
    with pytest.raises(ValueError, match="a prewarmer needs at least one slot"):
        prewarm.Prewarmer(slots=0)
