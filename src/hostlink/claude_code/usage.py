"""The plan's usage as people read it (`hostlink claude-code usage`) and as programs do
(`--json`, `GET /v1/usage` of `hostlink serve`): the same facts, from one report.

A report is what the API said with its last answer, so each window is shown with how long
ago that was; a window whose reset time has passed is "unknown until the next request".
"""

from __future__ import annotations

import time
from typing import Any

from hostlink.claude_code import plan

UNKNOWN = "unknown until the next request"


def as_json(usage: plan.PlanUsage | None, mode: str, now: float | None = None) -> dict[str, Any]:
    """`{"plan": …, "extra_usage_guard": …}`; `plan` is None before any report. Each
    window says whether it is `current` (its reset has not passed)."""
    now = time.time() if now is None else now
    refusal = plan.refusal(usage, now) if mode == "refuse" else None
    guard = {"mode": mode, "refusing": refusal is not None,
             "refused_until": refusal.resets_at if refusal is not None else None}
    if usage is None:
        return {"plan": None, "extra_usage_guard": guard}
    value = usage.to_json()
    value["age_seconds"] = max(0, int(now - usage.seen_at))
    value["current"] = usage.resets_at is None or usage.resets_at > now
    for window in value["windows"]:
        window["current"] = window["resets_at"] is None or window["resets_at"] > now
    value["draws_extra_usage"] = usage.draws_extra_usage() and value["current"]
    return {"plan": value, "extra_usage_guard": guard}


def describe(usage: plan.PlanUsage | None, mode: str, now: float | None = None) -> str:
    """Lines for a terminal: each window as last seen, with its reset in local time."""
    now = time.time() if now is None else now
    if usage is None:
        return (f"Claude plan usage: {UNKNOWN} (no request has reported it yet; "
                f"`claude-code usage --probe` makes one)\nextra usage guard: {mode}")
    lines = [f"Claude plan usage, as reported {_ago(now - usage.seen_at)} ({plan.local_time(usage.seen_at)}):"]
    if usage.resets_at is not None and usage.resets_at <= now:
        lines.append(f"  status: {UNKNOWN} (the {plan.window_name(usage.window)} window reset at "
                     f"{plan.local_time(usage.resets_at)})")
    else:
        deciding = f" ({plan.window_name(usage.window)} window)" if usage.window else ""
        lines.append(f"  status: {usage.status}{deciding}")
    for window in usage.windows:
        lines.append(f"  {plan.window_name(window.name)} window: {_window(window, now)}")
    lines.append(f"  extra usage: {_extra(usage, now)}")
    refusal = plan.refusal(usage, now) if mode == "refuse" else None
    guard = f"{mode}, refusing requests until {plan.local_time(refusal.resets_at)}" \
        if refusal is not None and refusal.resets_at is not None else mode
    lines.append(f"extra usage guard: {guard}")
    return "\n".join(lines)


def _window(window: plan.Window, now: float) -> str:
    if window.resets_at is not None and window.resets_at <= now:
        return f"{UNKNOWN} (reset at {plan.local_time(window.resets_at)})"
    used = f"{round(window.utilization * 100)}% used" if window.utilization is not None else "use not reported"
    if window.status not in (None, "allowed"):
        used += f" ({window.status})"
    if window.resets_at is not None:
        used += f", resets {plan.local_time(window.resets_at)} (in {_span(window.resets_at - now)})"
    return used


def _extra(usage: plan.PlanUsage, now: float) -> str:
    status = usage.extra_usage_status or "not reported"
    if usage.extra_usage_disabled_reason:
        status += f" (off: {usage.extra_usage_disabled_reason})"
    current = usage.resets_at is None or usage.resets_at > now
    if usage.draws_extra_usage() and current:
        status += ", requests draw on it now"
    elif usage.draws_extra_usage():
        status += f", drawn on until {plan.local_time(usage.episode_end())}"
    if usage.extra_usage_resets_at is not None:
        status += f"; its limit resets {plan.local_time(usage.extra_usage_resets_at)}"
    return status


def _ago(seconds: float) -> str:
    return "just now" if seconds < 60 else f"{_span(seconds)} ago"


def _span(seconds: float) -> str:
    seconds = max(0, int(seconds))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes = rest // 60
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    return f"{max(minutes, 1)} min"
