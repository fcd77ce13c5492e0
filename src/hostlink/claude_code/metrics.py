"""The last provider request's metrics, kept for `hostlink claude-code doctor`.

Only an allowlist of bounded facts (sizes, counts, token usage, timings, outcome codes) is
ever written, so a metrics file cannot carry prompts, messages, arguments, results,
credentials or paths, whatever a caller passes in. `plan` is the plan's usage as last
reported (`PlanUsage`, re-validated on write and read); a
request without a report keeps the one before, so `hostlink claude-code usage` and the
extra-usage guard see the latest across requests and processes. The one text fact,
`exit_stderr`, is the provider's bounded, sanitized tail of the stderr of a child that exited
before it was given a prompt (so it holds no content, and private paths are already replaced):
the reason a `claude` did not start, which the doctor shows.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from typing import Any

from hostlink.claude_code.plan import PlanUsage
from hostlink.host.output import one_line
from hostlink.host.private import PrivateStateError, read_private_json, replace_private_file, runtime_root

FILE_NAME = "claude-code-last-request.json"
_MAX_BYTES = 16 * 1024

_NUMBERS = frozenset(
    {
        "duration_ms",
        "init_ms",
        "start_ms",
        "first_event_ms",
        "cleanup_ms",
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "transcript_bytes",
        "records",
        "tools",
        "images",
        "exit_code",
        "prewarmed_waiting",
        "prewarm_slots",
    }
)
# Each text fact is a code from a closed set or of a narrow shape, so no caller can store
# free text (a prompt, a path) under an allowed key.
_CODES = {
    "outcome": re.compile(r"done|error|stopped"),
    "stop_reason": re.compile(r"stop|length|toolUse|error|aborted"),
    "error_code": re.compile(r"[a-z][a-z_]{0,39}"),
    "model": re.compile(r"[a-z0-9][a-z0-9.-]{0,39}"),
    "cli_version": re.compile(r"\d{1,6}\.\d{1,6}\.\d{1,6}"),
    "child": re.compile(r"prewarmed|replaced|fresh"),
    "next_child": re.compile(r"ahead|proposal|after"),
}


_TEXTS = {"exit_stderr": 640}


def sanitize(facts: Mapping[str, Any]) -> dict[str, Any]:
    """Keep allowlisted keys with plain bounded values; drop everything else silently."""
    kept: dict[str, Any] = {}
    for key, value in facts.items():
        if key in _NUMBERS and isinstance(value, (int, float)) and not isinstance(value, bool):
            if value == value and abs(value) < 1e15:  # finite, bounded
                kept[key] = round(value, 3) if isinstance(value, float) else value
        elif key in _CODES and isinstance(value, str) and _CODES[key].fullmatch(value):
            kept[key] = value
        elif key == "plan" and (usage := PlanUsage.from_json(value)) is not None:
            kept[key] = usage.to_json()
        elif key in _TEXTS and isinstance(value, str) and value:
            kept[key] = one_line(value, _TEXTS[key])
    return kept


def record(facts: Mapping[str, Any]) -> None:
    """Replace the stored last-request metrics (best effort: metrics never fail a request)."""
    data = {"recorded_at": int(time.time()), **sanitize(facts)}
    try:
        previous = last_plan()
        if previous is not None and ("plan" not in data or data["plan"]["seen_at"] < previous.seen_at):
            data["plan"] = previous.to_json()  # a request without a report, or one that saw it earlier
        replace_private_file(runtime_root(), FILE_NAME, json.dumps(data, sort_keys=True))
    except (OSError, PrivateStateError):
        pass


def last() -> dict[str, Any] | None:
    """The stored metrics, re-sanitized on read; None when absent or unreadable."""
    value = read_private_json(runtime_root() / FILE_NAME, _MAX_BYTES)
    if not isinstance(value, dict):
        return None
    recorded = value.get("recorded_at")
    kept = sanitize(value)
    if isinstance(recorded, int) and not isinstance(recorded, bool):
        kept["recorded_at"] = recorded
    return kept


def last_plan() -> PlanUsage | None:
    """The plan's usage as last reported by any request of this user, or None."""
    stored = last()
    return PlanUsage.from_json(stored.get("plan")) if stored is not None else None
