"""ClaudeCodeExtension: side-effect-free registration, honest unavailability, session lifecycle."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from claude_transport_support import (
    MODEL,
    OPENING,
    FakeClaude,
    context,
)
from host_support import Notices
from hostlink.claude_code import metrics
from hostlink.claude_code.extension import NOT_INSTALLED, ClaudeCodeExtension
from hostlink.host import CancelSignal, Done, ErrorEvent, Registry, TextDelta
from hostlink.host.private import MARKER
from hostlink.host.session import HostSession

PROMPT = "a prompt that must not reach the metrics"



def registered(environ) -> Registry:
    registry = Registry()
    ClaudeCodeExtension(environ=environ).register(registry)
    return registry


def fake_environ(fake: FakeClaude) -> dict[str, str]:
    return {
        "HOME": str(fake.home),
        "PATH": f"{fake.executable.parent}:{os.environ['PATH']}",
        "CLAUDE_CONFIG_DIR": str(fake.config_dir),
    }


async def stream(registry: Registry, ctx=None):
    provider = registry.providers["claude-code"]
    return [event async for event in provider.stream(MODEL, ctx or context(PROMPT), CancelSignal())]


def test_registration_offers_provider_tool_and_command(tmp_path):
    fake = FakeClaude(tmp_path)
    registry = registered(fake_environ(fake))
    provider = registry.providers["claude-code"]
    assert provider.unavailable is None
    assert {"opus", "sonnet", "haiku"} <= {model.id for model in provider.models}
    assert list(registry.tools) == ["claude_code_web_search"]
    assert list(registry.commands) == ["claude-code"]
    assert fake.log() == []  # the CLI was not run


def test_without_claude_on_path_the_provider_is_unavailable_with_a_fix(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    provider = registered({"PATH": str(empty)}).providers["claude-code"]
    assert provider.unavailable == NOT_INSTALLED
    assert "npm install -g @anthropic-ai/claude-code" in NOT_INSTALLED and "claude auth login" in NOT_INSTALLED


@pytest.mark.anyio
async def test_streaming_while_unavailable_is_an_error(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    (event,) = await stream(registered({"PATH": str(empty)}))
    assert isinstance(event, ErrorEvent) and event.code == "unavailable" and "PATH" in event.message


def test_registration_has_no_side_effects(tmp_path):
    """No subprocess, no private files, no heavy imports: checked in a fresh interpreter."""
    runtime = tmp_path / "runtime"
    code = (
        "import subprocess, sys\n"
        "def refuse(*a, **k): raise AssertionError('registration started a process')\n"
        "subprocess.Popen = refuse\n"
        "from hostlink.claude_code.extension import ClaudeCodeExtension\n"
        "from hostlink.host import Registry\n"
        "ClaudeCodeExtension().register(Registry())\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'anyio', 'asyncio', 'mcp', 'keyring', 'llm', 'httpx2'}))\n"
    )
    env = {**os.environ, "HOSTLINK_RUNTIME_DIR": str(runtime)}
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert output.stdout.strip() == "[]"
    assert not runtime.exists()


@pytest.mark.anyio
async def test_a_request_through_the_extension_records_content_free_metrics(tmp_path, runtime_dir):
    fake = FakeClaude(tmp_path)
    fake.script(*OPENING, {"op": "message", "blocks": [{"text": "hello back"}]}, {"op": "result"})
    host = HostSession([ClaudeCodeExtension(environ=fake_environ(fake))])
    await host.start(cwd=fake.home, project_trusted=False, notifier=Notices())
    try:
        events = await stream(host.registry)
    finally:
        await host.shutdown()
    assert [e.delta for e in events if isinstance(e, TextDelta)] == ["hello back"]
    assert isinstance(events[-1], Done)
    recorded = metrics.last()
    assert recorded["outcome"] == "done" and recorded["stop_reason"] == "stop" and recorded["model"] == "sonnet"
    assert recorded["tools"] == 1 and recorded["records"] == 2 and recorded["input_tokens"] == 5
    raw = (runtime_dir / metrics.FILE_NAME).read_text()
    assert PROMPT not in raw and "hello back" not in raw and str(tmp_path) not in raw
    (runtime_dir / metrics.FILE_NAME).unlink()


@pytest.mark.anyio
async def test_not_signed_in_fails_the_first_request_with_an_explanation(tmp_path, runtime_dir):
    fake = FakeClaude(tmp_path)
    fake.script({"op": "control", "account": {"tokenSource": "none"}})
    events = await stream(registered(fake_environ(fake)))
    (event,) = events
    assert (isinstance(event, ErrorEvent) and "not signed in" in event.message
            and "claude auth login" in event.message and "claude setup-token" in event.message)
    assert metrics.last()["outcome"] == "error"
    (runtime_dir / metrics.FILE_NAME).unlink()


@pytest.mark.anyio
async def test_a_failed_request_is_counted_in_the_metrics_by_its_error_without_tokens(tmp_path, runtime_dir):
    from tracing_support import metering, points

    reader = metering()
    fake = FakeClaude(tmp_path)
    fake.script({"op": "control", "account": {"tokenSource": "none"}})
    (event,) = await stream(registered(fake_environ(fake)))
    found = points(reader.get_metrics_data())
    (runtime_dir / metrics.FILE_NAME).unlink()
    [request] = found["gen_ai.client.operation.duration"]
    assert request.count == 1 and dict(request.attributes) == {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "claude-code", "gen_ai.request.model": "sonnet",
        "error.type": event.code}
    assert sorted(found) == ["gen_ai.client.operation.duration"]  # no first token, no tokens, no prewarm outcome


@pytest.mark.anyio
async def test_an_extra_usage_option_it_does_not_know_is_refused_by_name_before_claude_starts(tmp_path, runtime_dir):
    from dataclasses import replace

    fake = FakeClaude(tmp_path)
    host = HostSession([ClaudeCodeExtension(environ=fake_environ(fake))])
    await host.start(cwd=fake.home, project_trusted=False, notifier=Notices())
    try:
        events = await stream(host.registry, replace(context(PROMPT), options={"extra_usage": "sometimes"}))
    finally:
        await host.shutdown()
    (event,) = events
    assert isinstance(event, ErrorEvent) and event.code == "invalid_request"
    assert "extra_usage" in event.message and "sometimes" in event.message
    assert fake.log() == []  # no claude started
    (runtime_dir / metrics.FILE_NAME).unlink(missing_ok=True)


@pytest.mark.anyio
async def test_stale_private_dirs_are_recovered_at_session_start_not_registration(tmp_path, runtime_dir):
    runtime_dir.mkdir()
    stale = runtime_dir / "claude-request-stale"
    stale.mkdir(mode=0o700)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (stale / MARKER).write_text(json.dumps({"package": "hostlink", "pid": dead.pid, "created": time.time() - 3600}))

    fake = FakeClaude(tmp_path)
    host = HostSession([ClaudeCodeExtension(environ=fake_environ(fake))])
    assert stale.exists()
    await host.start(cwd=fake.home, project_trusted=False, notifier=Notices())
    assert not stale.exists()
    await host.shutdown()


@pytest.mark.anyio
async def test_command(tmp_path, runtime_dir):
    fake = FakeClaude(tmp_path)
    registry = registered(fake_environ(fake))
    command = registry.commands["claude-code"]
    assert await command.run(["bogus"], CancelSignal()) == "usage: /claude-code doctor | usage"
    empty = tmp_path / "empty"
    empty.mkdir()
    text = await registered({"PATH": str(empty)}).commands["claude-code"].run(["doctor"], CancelSignal())
    assert "FAIL claude CLI: not found on PATH" in text and "ok   proposal bridge" in text
