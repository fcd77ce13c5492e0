"""The Claude plan end to end with the real `claude` CLI: the fake Anthropic API sends the
`anthropic-ratelimit-unified-*` headers, the CLI (signed in as a subscription by a setup token,
the code-only test option) reports them, hostlink acts — on the hostlink host session, in
pydantic-ai and in llm (serve: tests/serve/test_plan.py).

A `claude` wrapper first on PATH logs every start, so "refused before any claude starts" is
asserted by the log and by the fake API's request count, not inferred.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from pydantic_ai import Agent
from pydantic_ai.exceptions import ModelQuotaExceededError

from claude_transport_support import FAKES, context
from hostlink.adapters.pydantic_ai import ClaudeCodeModel, ClaudePlanRefusedError
from hostlink.claude_code import doctor, metrics, plan
from hostlink.claude_code.extension import ClaudeCodeExtension
from hostlink.claude_code.models import MODELS
from hostlink.claude_code.process import ClaudeTransportOptions
from hostlink.claude_code.provider import ClaudeCodeProvider
from hostlink.cli import cli
from hostlink.cli.claude_code import show_usage
from hostlink.host import CancelSignal, Done, ErrorEvent
from hostlink.host.session import HostSession
from llm_support import LlmDirs, run_llm

sys.path.insert(0, str(FAKES))
import fake_anthropic as fa

from peers import CLAUDE, NODE_BIN, requires_claude

pytestmark = [pytest.mark.slow, requires_claude]
TOKEN = "sk-ant-oat01-fake-test"
SONNET = next(spec for spec in MODELS if spec.id == "sonnet")
THIRD_PARTY = "Third-party apps now draw from your extra usage, not your plan limits."


class CountingClaude:
    """A `claude` first on PATH that logs each start, then runs the real CLI."""

    def __init__(self, root: Path) -> None:
        self.bin = root / "counting-bin"
        self.bin.mkdir()
        self.log = root / "claude-starts.log"
        script = self.bin / "claude"
        script.write_text(f'#!/bin/sh\necho start >> "{self.log}"\nexec "{CLAUDE}" "$@"\n')
        script.chmod(0o755)

    @property
    def starts(self) -> int:
        return len(self.log.read_text().splitlines()) if self.log.exists() else 0

    @property
    def path(self) -> str:
        return f"{self.bin}:{NODE_BIN}:{Path(sys.executable).parent}:/usr/bin:/bin"


@pytest.fixture
def claude(tmp_path, monkeypatch):
    # A CLI facts cache of its own: the shared one keeps the last few executables, and the
    # other workers' tests (a fake claude each) pushed this one's out mid-test (2 more starts).
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return CountingClaude(tmp_path)


def subscription(api) -> ClaudeTransportOptions:
    return ClaudeTransportOptions(test_api_base_url=api.base_url, test_oauth_token=TOKEN)


class Notices:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def notify(self, message: str, level: str = "info") -> None:
        self.seen.append((message, level))

    def about(self, words: str) -> list[str]:
        return [message for message, _ in self.seen if words in message]


async def ask(extension: ClaudeCodeExtension, notices: Notices, home: Path, *, options: dict | None = None) -> list:
    """One request through a hostlink host session over `extension`."""
    host = HostSession([extension], lasting=False)
    await host.start(cwd=home, project_trusted=False, notifier=notices)
    try:
        ctx = context("hello", tools=())
        if options:
            ctx = type(ctx)(ctx.system_prompt, ctx.messages, ctx.tools, options)
        return [event async for event in host.stream("claude-code", SONNET, ctx, CancelSignal())]
    finally:
        await host.shutdown()


def extension(api, home, claude, mode: str | None = None) -> ClaudeCodeExtension:
    return ClaudeCodeExtension(extra_usage=mode, options=subscription(api),
                               environ={"HOME": str(home), "PATH": claude.path})


# --- what the CLI reports ----------------------------------------------------------------


@pytest.mark.anyio
async def test_cli_facts_an_api_key_reports_nothing_a_setup_token_reports_the_plan(api, home, stored):
    api.headers = fa.drawing_extra_usage()
    reports: list[plan.PlanUsage] = []
    for options in (ClaudeTransportOptions(test_api_base_url=api.base_url, test_api_key="sk-fake"), subscription(api)):
        provider = ClaudeCodeProvider(str(CLAUDE), cwd=home, options=options, on_plan=reports.append,
                                      environ={"HOME": str(home), "PATH": os.environ["PATH"]})
        events = [event async for event in provider.stream(SONNET, context("hi", tools=()), CancelSignal())]
        assert isinstance(events[-1], Done)  # the request itself succeeds, drawn from extra usage
    (report,) = reports  # only the subscription's child reported
    assert (report.status, report.window, report.extra_usage_status, report.using_extra_usage) == (
        "rejected", "five_hour", "allowed", True)
    assert [(w.name, w.utilization) for w in report.windows] == [("five_hour", 1.0)]
    first, second = api.requests
    assert "x-api-key" in {k.lower() for k in first["headers"]}
    assert second["headers"].get("Authorization") == f"Bearer {TOKEN}"  # the setup token signed it in


@pytest.mark.anyio
async def test_a_request_that_ends_in_a_tool_call_reports_the_plan_too(api, home, stored):
    api.headers = fa.plan_headers("allowed_warning", utilization=0.93)
    api.push(fa.tool_use("mcp__hostlink__echo", {"text": "hi"}))
    reports: list[plan.PlanUsage] = []
    provider = ClaudeCodeProvider(str(CLAUDE), cwd=home, options=subscription(api), on_plan=reports.append,
                                  environ={"HOME": str(home), "PATH": os.environ["PATH"]})
    events = [event async for event in provider.stream(SONNET, context("echo hi"), CancelSignal())]
    assert isinstance(events[-1], Done) and events[-1].message.stop_reason == "toolUse"
    assert [(r.status, r.windows[0].utilization) for r in reports] == [("allowed_warning", 0.93)]


# --- the guard on the hostlink host session ------------------------------------------------


@pytest.mark.anyio
async def test_refuse_stops_the_next_request_before_claude_starts_until_the_reset(api, home, claude, stored):
    resets_at = int(time.time()) + 6
    api.headers = fa.drawing_extra_usage(resets_at)
    notices = Notices()
    guarded = extension(api, home, claude, "refuse")
    assert isinstance((await ask(guarded, notices, home))[-1], Done)  # the first draw is already sent
    assert notices.about("further requests are refused until")
    assert metrics.last_plan().using_extra_usage  # kept in the private last-request record

    starts, sent = claude.starts, len(api.messages_requests())
    (refused,) = await ask(guarded, notices, home)
    assert isinstance(refused, ErrorEvent) and refused.code == "quota_exceeded" and refused.resets_at == resets_at
    assert "5-hour window" in refused.message and plan.local_time(resets_at) in refused.message
    assert (claude.starts, len(api.messages_requests())) == (starts, sent)  # no claude, no API request
    # a new extension (another process) reads the stored report and refuses too
    (again,) = await ask(extension(api, home, claude, "refuse"), Notices(), home)
    assert again.code == "quota_exceeded" and claude.starts == starts

    api.headers = fa.plan_headers()
    time.sleep(max(0.0, resets_at - time.time() + 0.2))
    assert isinstance((await ask(guarded, notices, home))[-1], Done)  # the reset lifted the refusal
    assert claude.starts == starts + 1


@pytest.mark.anyio
async def test_warn_notifies_once_and_allow_is_silent(api, home, claude, stored):
    api.headers = fa.drawing_extra_usage()
    warned = Notices()
    guarded = extension(api, home, claude, "warn")
    for _ in range(2):
        assert isinstance((await ask(guarded, warned, home))[-1], Done)
    assert len(warned.about("extra usage")) == 1 and warned.seen[0][1] == "warning"

    quiet = Notices()
    # the request's own option (the llm model option) wins over the host's warn
    assert isinstance((await ask(guarded, quiet, home, options={"extra_usage": "allow"}))[-1], Done)
    assert quiet.seen == []


# --- the headless sign-in ------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_doctor_accepts_the_setup_token(home, claude, runtime_dir):
    diagnosis = await doctor.diagnose({"HOME": str(home), "PATH": claude.path, "CLAUDE_CODE_OAUTH_TOKEN": TOKEN})
    auth = next(check for check in diagnosis.checks if check.key == "auth")
    assert auth.ok and auth.facts["authMethod"] == "oauth_token" and "setup token" in auth.line
    assert TOKEN not in diagnosis.text() and TOKEN not in str(diagnosis.report())
    without = await doctor.diagnose({"HOME": str(home), "PATH": claude.path})
    assert not next(check for check in without.checks if check.key == "auth").ok


# --- pydantic-ai -----------------------------------------------------------------------------


@pytest.mark.anyio  # agent.run, not run_sync: that one leaves its event loop open for the thread's life
async def test_pydantic_ai_refuse_is_a_quota_error_and_plan_refusals_their_own(api, home, claude, stored):
    model = ClaudeCodeModel("sonnet", cwd=home, extra_usage="refuse", options=subscription(api),
                            environ={"HOME": str(home), "PATH": claude.path})
    agent = Agent(model)
    api.headers = fa.drawing_extra_usage()
    assert (await agent.run("hello")).output == "default answer"
    starts, sent = claude.starts, len(api.messages_requests())
    with pytest.raises(ModelQuotaExceededError) as refused:
        await agent.run("hello again")
    assert "extra usage is refused" in str(refused.value) and refused.value.retry_after > 3000
    assert (claude.starts, len(api.messages_requests())) == (starts, sent)

    (stored / metrics.FILE_NAME).unlink()
    api.headers = fa.plan_headers()
    api.push(fa.HttpError(403, "permission_error", THIRD_PARTY))
    with pytest.raises(ClaudePlanRefusedError) as refusal:
        await agent.run("hello")
    assert "check the Claude plan's settings" in str(refusal.value) and THIRD_PARTY not in str(refusal.value)
    assert (claude.starts, len(api.messages_requests())) == (starts + 1, sent + 1)  # never retried


# --- llm ---------------------------------------------------------------------------------------


LLM_HOST = [sys.executable, str(Path(__file__).parents[1] / "llm_e2e_host.py")]


def llm(dirs: LlmDirs, api, claude: CountingClaude, *args: str):
    return run_llm(dirs, api.base_url, "--subscription", *args, path=claude.path, command=LLM_HOST, timeout=180)


def test_llm_refuse_plan_refusal_and_the_usage_command(api, claude, tmp_path):
    dirs = LlmDirs(tmp_path / "llm-run").create(mcp_config=None)
    api.headers = fa.drawing_extra_usage()
    first = llm(dirs, api, claude, "-m", "claude-code/haiku", "-o", "extra_usage", "refuse", "hello")
    assert first.returncode == 0 and first.stdout.strip() == "default answer"
    assert "further requests are refused until" in first.stderr
    starts, sent = claude.starts, len(api.messages_requests())
    second = llm(dirs, api, claude, "-m", "claude-code/haiku", "-o", "extra_usage", "refuse", "hello")
    assert second.returncode == 1 and "extra usage is refused" in second.stderr and "Traceback" not in second.stderr
    assert (claude.starts, len(api.messages_requests())) == (starts, sent)

    usage = llm(dirs, api, claude, "claude-code", "usage", "--json")
    assert usage.returncode == 0 and '"using_extra_usage":true' in usage.stdout.replace(" ", "")
    bad = llm(dirs, api, claude, "-m", "claude-code/haiku", "-o", "extra_usage", "sometimes", "hello")
    assert bad.returncode != 0 and "extra_usage" in bad.stderr

    (dirs.runtime / metrics.FILE_NAME).unlink()
    api.headers = fa.plan_headers()
    api.push(fa.HttpError(403, "permission_error", THIRD_PARTY))
    refused = llm(dirs, api, claude, "-m", "claude-code/haiku", "hello")
    assert refused.returncode == 1 and "check the Claude plan's settings" in refused.stderr
    assert refused.stdout.strip() == "" and len(api.messages_requests()) == sent + 1


# --- hostlink claude-code usage ----------------------------------------------------------------


def test_the_usage_command_no_record_fresh_expired_and_probe(api, home, claude, stored):
    runner = CliRunner()
    empty = runner.invoke(cli, ["claude-code", "usage"], env={plan.ENV_VARIABLE: ""})
    assert empty.exit_code == 0 and "unknown until the next request" in empty.output and api.requests == []

    api.headers = fa.plan_headers(utilization=0.25)

    @click.command()
    @click.option("--json", "as_json", is_flag=True)
    def probe(as_json: bool) -> None:
        show_usage(lambda: extension(api, home, claude), as_json=as_json, probe=True)

    probed = runner.invoke(probe, [])
    assert probed.exit_code == 0, probed.output
    assert probed.output.startswith("probing: one minimal request")  # said before it ran
    assert "5-hour window: 25% used" in probed.output and "as reported just now" in probed.output
    (request,) = api.messages_requests()
    assert "haiku" in request["model"]

    fresh = runner.invoke(cli, ["claude-code", "usage", "--json"])
    assert fresh.exit_code == 0 and '"utilization":0.25' in fresh.output.replace(" ", "")

    past = plan.parse({"status": "allowed", "rateLimitType": "five_hour", "resetsAt": int(time.time()) - 60,
                       "unifiedWindows": {"five_hour": {"utilization": 0.9, "resetsAt": int(time.time()) - 60}}},
                      now=time.time() + 1)
    metrics.record({"outcome": "done", "plan": past.to_json()})
    expired = runner.invoke(cli, ["claude-code", "usage"])
    assert "5-hour window: unknown until the next request" in expired.output
    bad = runner.invoke(cli, ["claude-code", "usage"], env={plan.ENV_VARIABLE: "sometimes"})
    assert bad.exit_code == 2 and plan.ENV_VARIABLE in bad.output
