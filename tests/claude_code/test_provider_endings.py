"""How a request ends against the fake `claude`: an answer that breaks its own stop, a child that
exits badly after answering, the retry notice, and the plan reports read after the answer."""

from __future__ import annotations

import time

import pytest

from claude_transport_support import ECHO, OPENING, collect, context, live_processes_mentioning
from hostlink.claude_code.catalog import build_catalog
from hostlink.host import Done, ErrorEvent, TextDelta

pytestmark = pytest.mark.anyio

ECHO_ALIAS = "mcp__hostlink__" + build_catalog([ECHO], []).alias_for(ECHO.name)
PROPOSAL = {"op": "message", "stop_reason": "tool_use", "blocks": [{"tool": ECHO_ALIAS, "input": {"text": "x"}}]}
REPORT = {"type": "rate_limit_event",
          "rate_limit_info": {"status": "allowed", "resetsAt": int(time.time()) + 3600, "rateLimitType": "five_hour"}}


def the_error(events) -> ErrorEvent:
    assert [type(e) for e in events if not isinstance(e, TextDelta)] == [ErrorEvent], events
    return events[-1]


async def test_a_tool_call_in_an_answer_that_did_not_stop_for_it_fails(fake, runtime_dir):
    fake.script(*OPENING, {"op": "message", "stop_reason": "end_turn", "blocks": [{"tool": ECHO_ALIAS}]},
                {"op": "result"})
    error = the_error(await collect(fake.provider(), context()))
    assert (error.code, error.message) == ("protocol_error", "claude proposed a tool call without stopping for it")
    assert live_processes_mentioning(str(runtime_dir)) == []


async def test_a_result_before_the_answer_stopped_fails(fake, runtime_dir):
    fake.script(*OPENING, {"op": "message", "stop_reason": None, "blocks": [{"text": "half"}]}, {"op": "result"},
                {"op": "wait_signal"})
    error = the_error(await collect(fake.provider(), context()))
    assert (error.code, error.message) == ("protocol_error", "claude finished without an answer")


async def test_a_child_that_exits_with_a_status_after_answering_fails(fake, runtime_dir):
    fake.script(*OPENING, {"op": "message", "blocks": [{"text": "fine"}]}, {"op": "result"}, {"op": "exit", "code": 3})
    error = the_error(await collect(fake.provider(), context()))
    assert (error.code, error.message) == ("unexpected_exit", "claude exited with status 3")


async def test_a_plan_report_after_the_result_is_read_before_the_exit(fake, runtime_dir):
    fake.script(*OPENING, {"op": "message", "blocks": [{"text": "fine"}]}, {"op": "result"},
                {"op": "emit", "record": REPORT})
    provider = fake.provider()
    reports = []
    provider.on_plan = reports.append
    events = await collect(provider, context())
    assert events[0] == TextDelta("fine") and isinstance(events[-1], Done)
    assert [report.status for report in reports] == ["allowed"]


async def test_a_failed_result_after_the_answer_fails_the_request(fake, runtime_dir):
    failed = {"subtype": "error_during_execution", "is_error": True}
    fake.script(*OPENING, {"op": "message", "blocks": [{"text": "fine"}]}, {"op": "result"},
                {"op": "result", "fields": failed})
    events = await collect(fake.provider(), context())
    assert events[0] == TextDelta("fine")
    error = the_error(events)  # not a Done: the child's own verdict stands
    assert (error.code, error.message) == ("provider_error", "the Claude Code request failed")
    assert live_processes_mentioning(str(runtime_dir)) == []


async def test_the_retry_notice_reaches_the_user(fake, runtime_dir):
    fake.script(*OPENING, {"op": "emit", "record": {"type": "system", "subtype": "api_retry", "attempt": 1}},
                {"op": "message", "blocks": [{"text": "ok"}]}, {"op": "result"})
    events = await collect(fake.provider(), context())
    assert isinstance(events[-1], Done)
    assert fake.notices == [("Claude Code is retrying the request after an API error", "warning")]


@pytest.mark.parametrize(("after", "statuses"), [
    ([{"op": "emit", "record": REPORT}], ["allowed"]),
    ([{"op": "emit", "record": {"type": "rate_limit_event", "rate_limit_info": {"status": 7}}}], []),
    ([{"op": "emit", "record": {"type": "system", "subtype": "status"}}, {"op": "result"}], []),
    ([{"op": "exit", "code": 0}], []),
], ids=["report", "unreadable-report", "result-first", "no-report"])  # fmt: skip
async def test_the_plan_report_after_a_proposal(fake, runtime_dir, after, statuses):
    fake.script(*OPENING, PROPOSAL, *after, {"op": "wait_signal"})
    provider = fake.provider()
    reports = []
    provider.on_plan = reports.append
    events = await collect(provider, context())
    assert isinstance(events[-1], Done) and events[-1].message.stop_reason == "toolUse"
    assert [report.status for report in reports] == statuses
    assert live_processes_mentioning(str(runtime_dir)) == []
