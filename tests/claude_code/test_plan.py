"""The plan's usage reports, the extra-usage guard, the usage views and the provider hooks, on
their own (parsing, persistence, the fake `claude` for the hooks). The real CLI end to end is
in test_plan_real_cli.py."""

from __future__ import annotations

import json
import time

import anyio
import pytest

from claude_transport_support import OPENING, collect, context
from hostlink.claude_code import metrics, plan, protocol, usage
from hostlink.claude_code.guard import PlanGuard
from hostlink.claude_code.process import ENV_ALLOWLIST, ClaudeTransportOptions, child_environment
from hostlink.host import (
    CancelSignal,
    Context,
    Done,
    ErrorEvent,
    ModelSpec,
    ProviderRefused,
    ProviderRequest,
    ProviderResponse,
    Registry,
    TextContent,
    UserMessage,
)

NOW = 1_900_000_000
OVERAGE = {"status": "rejected", "resetsAt": NOW + 3600, "rateLimitType": "five_hour", "overageStatus": "allowed",
           "overageResetsAt": NOW + 86400, "isUsingOverage": True, "overageInUse": True,
           "unifiedWindows": {"five_hour": {"utilization": 1, "resetsAt": NOW + 3600},
                              "seven_day": {"utilization": 0.5, "resetsAt": NOW + 86400}}}
MODEL = ModelSpec("sonnet", "Claude Sonnet")


# --- parsing ---------------------------------------------------------------------------


def test_a_report_is_parsed_whole():
    usage_ = plan.parse(OVERAGE, now=NOW)
    assert usage_ is not None
    assert (usage_.status, usage_.window, usage_.resets_at, usage_.seen_at) == (
        "rejected", "five_hour", NOW + 3600, NOW)
    assert [(w.name, w.utilization, w.resets_at) for w in usage_.windows] == [
        ("five_hour", 1.0, NOW + 3600), ("seven_day", 0.5, NOW + 86400)]
    assert (usage_.extra_usage_status, usage_.extra_usage_resets_at, usage_.using_extra_usage) == (
        "allowed", NOW + 86400, True)
    assert usage_.draws_extra_usage()
    assert plan.PlanUsage.from_json(json.loads(json.dumps(usage_.to_json()))) == usage_


def test_the_warning_threshold_without_unified_windows_becomes_the_window():
    usage_ = plan.parse({"status": "allowed_warning", "rateLimitType": "seven_day", "utilization": 0.91,
                         "surpassedThreshold": 0.9, "resetsAt": NOW + 60}, now=NOW)
    assert [(w.name, w.utilization, w.surpassed_threshold) for w in usage_.windows] == [("seven_day", 0.91, 0.9)]
    assert not usage_.draws_extra_usage()


@pytest.mark.parametrize("info", [None, [], {}, {"status": 3}, {"status": "Allowed!"}, {"status": "\x1b[31m"}])
def test_a_report_without_a_readable_status_is_dropped(info):
    assert plan.parse(info) is None


def test_unknown_fields_and_malformed_values_are_ignored_never_fatal():
    usage_ = plan.parse({"status": "allowed", "resetsAt": "soon", "rateLimitType": "x" * 80, "brandNew": {"a": [1]},
                         "overageStatus": "\x1b]0;title\x07", "overageDisabledReason": "/home/user/secret",
                         "isUsingOverage": "yes",
                         "unifiedWindows": {"five_hour": {"utilization": float("nan"), "resetsAt": -5},
                                            "Bad Name": {"utilization": 0.1}, "seven_day": "full",
                                            "new_window": {"utilization": 1e9, "resetsAt": 10**13}}}, now=NOW)
    assert usage_ == plan.PlanUsage(seen_at=NOW, status="allowed",
                                    windows=(plan.Window("five_hour"), plan.Window("new_window")))


def test_stored_values_are_checked_again_on_read():
    assert plan.PlanUsage.from_json({"seen_at": NOW, "status": "allowed", "windows": [{"name": "../x"}],
                                     "extra_usage_disabled_reason": "rm -rf /"}) == plan.PlanUsage(NOW, "allowed")
    assert plan.PlanUsage.from_json({"status": "allowed"}) is None
    assert plan.PlanUsage.from_json("allowed") is None


# --- the guard -------------------------------------------------------------------------


def test_refusal_names_the_window_and_its_reset_and_lifts_at_the_reset():
    usage_ = plan.parse(OVERAGE, now=NOW)
    error = plan.refusal(usage_, now=NOW + 10)
    assert error is not None and error.code == "quota_exceeded" and not error.retryable
    assert error.resets_at == NOW + 3600 and "5-hour window" in error.message
    assert plan.local_time(NOW + 3600) in error.message
    assert plan.refusal(usage_, now=NOW + 3600) is None


@pytest.mark.parametrize(("info", "draws"), [
    ({"status": "allowed", "isUsingOverage": False, "overageStatus": "allowed"}, False),
    ({"status": "allowed_warning", "overageStatus": "allowed"}, False),
    ({"status": "rejected", "overageStatus": "rejected", "overageDisabledReason": "out_of_credits"}, False),
    ({"status": "rejected", "overageStatus": "allowed_warning"}, True),  # only extra usage would continue
    ({"status": "allowed", "isUsingOverage": True}, True),
])
def test_what_counts_as_drawing_on_extra_usage(info, draws):
    assert plan.parse(info, now=NOW).draws_extra_usage() is draws


def test_without_a_reset_time_a_refusal_lasts_the_fallback():
    usage_ = plan.parse({"status": "rejected", "overageStatus": "allowed"}, now=NOW)
    assert plan.refusal(usage_, now=NOW).resets_at == NOW + plan.FALLBACK_REFUSAL_SECONDS


def test_the_mode_comes_from_the_request_then_the_host_then_the_environment():
    env = {plan.ENV_VARIABLE: "refuse"}
    assert PlanGuard(environ={}).mode() == "warn"
    assert PlanGuard(environ=env).mode() == "refuse"
    assert PlanGuard("allow", environ=env).mode() == "allow"
    assert PlanGuard("allow", environ=env).mode({"extra_usage": "warn"}) == "warn"
    with pytest.raises(plan.ExtraUsageSettingError, match=plan.ENV_VARIABLE):
        PlanGuard(environ={plan.ENV_VARIABLE: "sometimes"}).mode()
    with pytest.raises(plan.ExtraUsageSettingError, match="option extra_usage"):
        PlanGuard().mode({"extra_usage": "never"})
    with pytest.raises(plan.ExtraUsageSettingError, match="no option 'temperature'"):
        PlanGuard().mode({"temperature": "1"})
    with pytest.raises(ValueError, match="extra_usage"):
        PlanGuard("maybe")


async def _guarded(guard: PlanGuard, options: dict | None = None) -> None:
    await guard.before_request(ProviderRequest("claude-code", MODEL, Context("", [], (), options or {})))


@pytest.mark.anyio
async def test_the_guard_refuses_warns_once_or_stays_silent(runtime_dir):
    usage_ = plan.parse(OVERAGE)  # seen now, the window resets in an hour
    told: list[tuple[str, str]] = []

    class Notes:
        def notify(self, message: str, level: str = "info") -> None:
            told.append((message, level))

    for mode in ("allow", "warn", "refuse"):
        guard = PlanGuard(mode, environ={})
        guard.notifier = Notes()
        guard.observe(usage_, mode)
        if mode == "refuse":
            with pytest.raises(ProviderRefused) as refused:
                await _guarded(guard)
            assert refused.value.error.code == "quota_exceeded"
        else:
            await _guarded(guard)
            await _guarded(guard)
        # a request's own option wins over the host's mode
        await _guarded(guard, {"extra_usage": "allow"})
    assert [level for _, level in told] == ["warning", "warning"]
    assert "draw on the Claude plan's extra usage" in told[0][0]  # warn: once, whatever the requests
    assert "further requests are refused until" in told[1][0]  # refuse: what the last request did


@pytest.mark.anyio
async def test_a_requests_own_extra_usage_option_it_does_not_know_is_refused_by_name(runtime_dir):
    with pytest.raises(ProviderRefused) as refused:
        await _guarded(PlanGuard("allow", environ={}), {"extra_usage": "sometimes"})
    assert refused.value.error.code == "invalid_request"
    assert refused.value.error.message == "option extra_usage: 'sometimes' is not one of allow, warn, refuse"


@pytest.mark.anyio
async def test_the_guard_reads_the_report_another_process_stored(stored):
    metrics.record({"outcome": "done", "plan": plan.parse(OVERAGE).to_json()})
    with pytest.raises(ProviderRefused):
        await _guarded(PlanGuard("refuse", environ={}))
    assert await PlanGuard("refuse", environ={}).before_request(
        ProviderRequest("another-provider", MODEL, Context("", []))) is None


def test_a_request_without_a_report_keeps_the_newest_one(stored):
    newer = plan.parse(OVERAGE, now=NOW + 5)
    metrics.record({"outcome": "done", "plan": newer.to_json()})
    metrics.record({"outcome": "done"})
    metrics.record({"outcome": "done", "plan": plan.parse({"status": "allowed"}, now=NOW).to_json()})
    assert metrics.last_plan() == newer
    metrics.record({"outcome": "done", "plan": {"status": "allowed", "seen_at": "\x1b"}})
    assert metrics.last_plan() == newer


# --- the usage views -------------------------------------------------------------------


def test_usage_with_no_record():
    assert "unknown until the next request" in usage.describe(None, "warn")
    assert usage.as_json(None, "refuse") == {
        "plan": None, "extra_usage_guard": {"mode": "refuse", "refusing": False, "refused_until": None}}


def test_usage_fresh_shows_each_window_in_local_time_and_the_guard():
    usage_ = plan.parse(OVERAGE, now=NOW)
    text = usage.describe(usage_, "refuse", now=NOW + 120)
    assert "as reported 2 min ago" in text
    assert f"5-hour window: 100% used, resets {plan.local_time(NOW + 3600)} (in 58 min)" in text
    assert "7-day window: 50% used" in text
    assert "extra usage: allowed, requests draw on it now" in text
    assert f"extra usage guard: refuse, refusing requests until {plan.local_time(NOW + 3600)}" in text
    data = usage.as_json(usage_, "refuse", now=NOW + 120)
    assert data["plan"]["age_seconds"] == 120 and data["plan"]["draws_extra_usage"] is True
    assert [w["current"] for w in data["plan"]["windows"]] == [True, True]
    assert data["extra_usage_guard"] == {"mode": "refuse", "refusing": True, "refused_until": NOW + 3600}


def test_an_unusable_runtime_directory_fails_no_request_and_the_guard_goes_by_what_it_saw(tmp_path, monkeypatch):
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    monkeypatch.setenv("HOSTLINK_RUNTIME_DIR", str(blocked))
    metrics.record({"outcome": "done"})  # best effort: the request goes on
    assert blocked.read_text() == ""
    guard = PlanGuard(environ={})
    assert guard.latest() is None
    newer, older = plan.parse(OVERAGE, now=NOW), plan.parse(OVERAGE, now=NOW - 60)
    guard.observe(newer, "allow")
    guard.observe(older, "allow")  # a report that arrived late changes nothing
    assert guard.latest() == newer and guard.refusing("refuse") is not None


def test_usage_of_a_window_without_a_reset_time_says_no_reset():
    report = plan.PlanUsage(seen_at=NOW, status="allowed", windows=(plan.Window("seven_day", 0.5),
                                                                    plan.Window("five_hour")))
    lines = usage.describe(report, "warn", now=NOW).splitlines()
    assert "  7-day window: 50% used" in lines and "  5-hour window: use not reported" in lines


def test_usage_expired_windows_are_unknown_until_the_next_request():
    usage_ = plan.parse(OVERAGE, now=NOW)
    later = NOW + 2 * 3600
    text = usage.describe(usage_, "refuse", now=later)
    assert "5-hour window: unknown until the next request" in text and "7-day window: 50% used" in text
    assert "status: unknown until the next request" in text and "refusing" not in text
    data = usage.as_json(usage_, "refuse", now=later)
    assert [w["current"] for w in data["plan"]["windows"]] == [False, True]
    assert data["plan"]["draws_extra_usage"] is False and data["extra_usage_guard"]["refusing"] is False


# --- errors ----------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "status"), [
    ("API Error: 400 Third-party apps now draw from your extra usage, not your plan limits.", 400),
    ("Failed to authenticate. API Error: 403 Third-party apps now draw from your extra usage.", 403),
    ("API Error: Server is temporarily limiting requests (not your usage limit) · Third-party apps now draw "
     "from your extra usage, not your plan limits.", 429),
    ("API Error: 400 Extra usage is disabled for your organization", 400),
    ("API Error: 400 Your organization has reached its monthly spend limit", 400),
])
def test_plan_refusals_are_their_own_error_with_advice(text, status):
    error = protocol.classify_error({"result": text, "api_error_status": status, "is_error": True})
    assert (error.code, error.retryable) == ("plan_refused", False)
    assert "check the Claude plan's settings" in error.message and text not in error.message


def test_a_usage_limit_takes_its_reset_from_the_report():
    report = plan.parse({"status": "rejected", "rateLimitType": "seven_day", "resetsAt": NOW + 600})
    error = protocol.classify_error({"result": "You've hit your weekly limit · resets 10:59pm (UTC)",
                                     "api_error_status": 429}, report)
    assert (error.code, error.resets_at, error.retryable) == ("quota_exceeded", NOW + 600, False)
    assert "7-day window" in error.message


# --- the headless sign-in --------------------------------------------------------------


def test_the_setup_token_is_forwarded_and_nothing_else_of_its_kind():
    parent = {"CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-x", "ANTHROPIC_AUTH_TOKEN": "t", "ANTHROPIC_API_KEY": "k",
              "ANTHROPIC_BASE_URL": "http://evil", "CLAUDE_CODE_USE_BEDROCK": "1", "CLAUDE_CODE_USE_VERTEX": "1"}
    env = child_environment(parent, ClaudeTransportOptions())
    assert env["CLAUDE_CODE_OAUTH_TOKEN"] == "sk-ant-oat01-x"
    assert not set(parent) - {"CLAUDE_CODE_OAUTH_TOKEN"} & set(env)
    assert "CLAUDE_CODE_OAUTH_TOKEN" in ENV_ALLOWLIST
    # the API-key test sign-in never carries a subscription token beside it
    test = ClaudeTransportOptions(test_api_base_url="http://127.0.0.1:1", test_api_key="sk-test")
    assert "CLAUDE_CODE_OAUTH_TOKEN" not in child_environment(parent, test)


def test_the_test_sign_in_takes_exactly_one_credential_and_loopback_only():
    ClaudeTransportOptions(test_api_base_url="http://127.0.0.1:1", test_oauth_token="t")
    one = "test_api_base_url goes with exactly one of test_api_key and test_oauth_token"
    for bad, message in (({"test_api_base_url": "http://127.0.0.1:1"}, one),
                         ({"test_api_base_url": "http://127.0.0.1:1", "test_api_key": "k", "test_oauth_token": "t"},
                          one),
                         ({"test_oauth_token": "t"}, one),
                         ({"test_api_base_url": "http://example.com", "test_oauth_token": "t"},
                          "test_api_base_url must be an http:// loopback address")):
        with pytest.raises(ValueError, match=message):
            ClaudeTransportOptions(**bad)


# --- the provider hooks ----------------------------------------------------------------


@pytest.mark.anyio
async def test_before_handlers_replace_the_context_in_order():
    registry = Registry()
    seen: list[str] = []

    async def first(request: ProviderRequest) -> Context:
        seen.append(request.context.system_prompt)
        return Context("replaced once", request.context.messages)

    async def second(request: ProviderRequest) -> None:
        seen.append(request.context.system_prompt)

    registry.on_before_provider_request(first)
    registry.on_before_provider_request(second)
    result = await registry.before_provider_request(ProviderRequest("p", MODEL, Context("original", [])))
    assert seen == ["original", "replaced once"] and result.system_prompt == "replaced once"


class Hooks(Registry):
    """A registry whose hooks a test scripts."""


@pytest.mark.anyio
async def test_the_replacement_is_what_claude_is_sent(fake, runtime_dir):
    hooks = Hooks()

    async def replace(request: ProviderRequest) -> Context:
        return Context("the host's own system prompt", [UserMessage([TextContent("replaced question")])])

    hooks.on_before_provider_request(replace)
    fake.script(*OPENING, {"op": "message", "blocks": [{"text": "ok"}]}, {"op": "result"})
    provider = fake.provider()
    provider.hooks = hooks
    events = await collect(provider, context("original question"))
    assert isinstance(events[-1], Done)
    sent = "".join(fake.logged("stdin"))
    assert "replaced question" in sent and "original question" not in sent


@pytest.mark.anyio
async def test_a_refusing_handler_stops_the_request_before_claude_starts(fake, runtime_dir):
    hooks = Hooks()

    async def refuse(request: ProviderRequest) -> None:
        raise ProviderRefused(ErrorEvent("not now", code="quota_exceeded", resets_at=NOW))

    hooks.on_before_provider_request(refuse)
    fake.script(*OPENING, {"op": "message", "blocks": [{"text": "ok"}]}, {"op": "result"})
    provider = fake.provider()
    provider.hooks = hooks
    events = await collect(provider, context())
    assert events == [ErrorEvent("not now", code="quota_exceeded", resets_at=NOW)]
    assert fake.logged("argv") == []  # no claude was started


@pytest.mark.anyio
async def test_observers_are_told_at_init_before_content_and_a_failing_one_fails_the_request(fake, runtime_dir):
    hooks = Hooks()
    told: list[tuple[ProviderResponse, int]] = []

    async def observe(response: ProviderResponse) -> None:
        told.append((response, len(fake.logged("stdin"))))

    hooks.on_after_provider_response(observe)
    fake.script(*OPENING, {"op": "message", "blocks": [{"text": "hello"}]}, {"op": "result"})
    provider = fake.provider()
    provider.hooks = hooks
    events = await collect(provider, context())
    assert isinstance(events[-1], Done)
    assert [(r.provider, r.model.id, r.status, dict(r.headers)) for r, _ in told] == [
        ("claude-code", "sonnet", 200, {})]
    assert told[0][1] == 2  # the control request and the prompt were read: init was validated

    async def broken(response: ProviderResponse) -> None:
        raise RuntimeError("observer bug")

    hooks.on_after_provider_response(broken)
    events = await collect(provider, context())
    assert [type(e) for e in events] == [ErrorEvent] and events[0].code == "hook_failed"  # no text published


@pytest.mark.anyio
async def test_a_failing_before_handler_fails_only_its_request(fake, runtime_dir):
    hooks = Hooks()

    async def broken(request: ProviderRequest) -> None:
        raise KeyError("bug")

    hooks.on_before_provider_request(broken)
    provider = fake.provider()
    provider.hooks = hooks
    events = await collect(provider, context())
    assert [e.code for e in events] == ["hook_failed"] and fake.logged("argv") == []


def test_seen_time_is_now_by_default():
    assert abs(plan.parse({"status": "allowed"}).seen_at - time.time()) < 5


@pytest.mark.anyio
async def test_no_child_is_prewarmed_once_refuse_would_refuse_the_follow_up(fake, stored):
    """A request that first draws on extra usage and ends in a tool call: under refuse its
    follow-up is refused, so no claude is started ahead of it."""
    import os

    from hostlink.claude_code.catalog import build_catalog
    from hostlink.claude_code.extension import ClaudeCodeExtension
    from hostlink.host.session import HostSession

    tool = context().tools[0]
    alias = "mcp__hostlink__" + build_catalog([tool], []).alias_for(tool.name)
    report = {"type": "rate_limit_event", "rate_limit_info": {**OVERAGE, "resetsAt": int(time.time()) + 3600}}
    fake.script(*OPENING,
                {"op": "message", "blocks": [{"tool": alias, "input": {"text": "x"}}], "stop_reason": "tool_use"},
                {"op": "emit", "record": report}, {"op": "wait_signal"})
    environ = {"HOME": str(fake.home), "PATH": f"{fake.executable.parent}:{os.environ['PATH']}",
               "CLAUDE_CONFIG_DIR": str(fake.config_dir)}
    for mode, starts in (("warn", 2), ("refuse", 1)):
        (fake.config_dir / "fake-claude-log.jsonl").unlink(missing_ok=True)
        (stored / metrics.FILE_NAME).unlink(missing_ok=True)
        host = HostSession([ClaudeCodeExtension(extra_usage=mode, environ=environ)])  # lasting: it prewarms
        await host.start(cwd=fake.home, project_trusted=False, notifier=fake)
        try:
            events = [e async for e in host.stream("claude-code", MODEL, context(), CancelSignal())]
            assert isinstance(events[-1], Done) and events[-1].message.stop_reason == "toolUse"
            deadline = time.monotonic() + 10
            while len(fake.logged("argv")) < starts and time.monotonic() < deadline:
                await anyio.sleep(0.05)
            await anyio.sleep(0.3)
            assert len(fake.logged("argv")) == starts
        finally:
            await host.shutdown()


def test_the_usage_view_shows_a_windows_own_status_days_and_why_extra_usage_is_off():
    info = {"status": "allowed_warning", "overageStatus": "rejected", "overageDisabledReason": "org_level_disabled",
            "unifiedWindows": {"seven_day": {"utilization": 0.9, "resetsAt": NOW + 3 * 86400 + 7200,
                                             "status": "allowed_warning"}}}  # fmt: skip
    lines = usage.describe(plan.parse(info, now=NOW), "warn", now=NOW).splitlines()
    assert lines[2] == (f"  7-day window: 90% used (allowed_warning), resets "
                        f"{plan.local_time(NOW + 3 * 86400 + 7200)} (in 3 d 2 h)")  # fmt: skip
    assert lines[3] == "  extra usage: rejected (off: org_level_disabled)"
