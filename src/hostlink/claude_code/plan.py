"""The Claude plan's usage as the `claude` CLI reports it, and the extra-usage guard.

Signed in with a subscription (`claude auth login` or `CLAUDE_CODE_OAUTH_TOKEN`), Claude
Code 2.1.332 reads the `anthropic-ratelimit-unified-*` headers of every API answer and writes
a `rate_limit_event` record after the message (`rate_limit_info`: `status`,
`rateLimitType`, `resetsAt`, `utilization`, `surpassedThreshold`, `overageStatus`,
`overageResetsAt`, `overageDisabledReason`, `isUsingOverage`, `overageInUse` and
`unifiedWindows` per window). Signed in with an API key it writes none. `parse` keeps
that record as one content-free `PlanUsage`: codes of a narrow shape, bounded numbers,
nothing else; unknown fields are ignored and a malformed one is dropped, never fatal.

The guard (`extra usage: allow | warn | refuse`) learns only from those reports: the request
that first draws on extra usage has already been sent when the CLI says so. From then on,
`refuse` fails every request before a `claude` starts until the window resets.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from hostlink.host import ErrorEvent

EXTRA_USAGE_MODES = ("allow", "warn", "refuse")
DEFAULT_MODE = "warn"
ENV_VARIABLE = "HOSTLINK_CLAUDE_EXTRA_USAGE"
# Without a reset time in the report, a refusal lasts this long from when it was seen.
FALLBACK_REFUSAL_SECONDS = 3600
_CODE = re.compile(r"[a-z][a-z0-9_]{0,39}")
_EXTRA_USAGE_OPEN = ("allowed", "allowed_warning")
WINDOW_NAMES = {"five_hour": "5-hour", "seven_day": "7-day", "seven_day_opus": "7-day Opus",
                "seven_day_sonnet": "7-day Sonnet", "seven_day_overage_included": "7-day (extra usage included)",
                "overage": "extra usage"}


class ExtraUsageSettingError(ValueError):
    """An extra-usage mode that is not allow, warn or refuse; the message names its source."""


def extra_usage_mode(value: str | None, source: str, environ: Mapping[str, str]) -> str:
    """The mode: `value` (from `source`, e.g. `--extra-usage`) when given, else
    `ENV_VARIABLE`, else `DEFAULT_MODE`."""
    if value is None:
        value, source = environ.get(ENV_VARIABLE), ENV_VARIABLE
    if value is None or value == "":
        return DEFAULT_MODE
    if value not in EXTRA_USAGE_MODES:
        raise ExtraUsageSettingError(f"{source}: {value[:40]!r} is not one of {', '.join(EXTRA_USAGE_MODES)}")
    return value


@dataclass(frozen=True)
class Window:
    """One plan window: `utilization` is the share used (1.0 = all of it)."""

    name: str
    utilization: float | None = None
    resets_at: int | None = None
    status: str | None = None
    surpassed_threshold: float | None = None


@dataclass(frozen=True)
class PlanUsage:
    """The plan's state in one report. `status` is `allowed`, `allowed_warning` or
    `rejected`; `window` is the window that decided it (`five_hour` …). Extra usage:
    `extra_usage_status` (`allowed` … `rejected`), when it resets, why it is off, and
    whether requests draw on it now."""

    seen_at: int
    status: str
    window: str | None = None
    resets_at: int | None = None
    windows: tuple[Window, ...] = ()
    extra_usage_status: str | None = None
    extra_usage_resets_at: int | None = None
    extra_usage_disabled_reason: str | None = None
    using_extra_usage: bool = False

    def draws_extra_usage(self) -> bool:
        """Requests draw on extra usage now, or would: the plan's window is exhausted and
        only extra usage lets them continue."""
        return self.using_extra_usage or (self.status == "rejected" and self.extra_usage_status in _EXTRA_USAGE_OPEN)

    def episode_end(self) -> int:
        """When the state this report describes ends (its reset; a fallback without one)."""
        return self.resets_at if self.resets_at is not None else self.seen_at + FALLBACK_REFUSAL_SECONDS

    def to_json(self) -> dict[str, Any]:
        value = asdict(self)
        value["windows"] = [asdict(window) for window in self.windows]
        return value

    @classmethod
    def from_json(cls, value: Any) -> PlanUsage | None:
        """A stored value re-checked as strictly as a fresh report (None when not valid)."""
        if not isinstance(value, dict):
            return None
        seen_at, status = _time(value.get("seen_at")), _code(value.get("status"))
        if seen_at is None or status is None:
            return None
        windows = value.get("windows")
        return cls(
            seen_at=seen_at, status=status, window=_code(value.get("window")), resets_at=_time(value.get("resets_at")),
            windows=tuple(w for w in (_stored_window(item) for item in windows) if w is not None)
            if isinstance(windows, list) else (),
            extra_usage_status=_code(value.get("extra_usage_status")),
            extra_usage_resets_at=_time(value.get("extra_usage_resets_at")),
            extra_usage_disabled_reason=_code(value.get("extra_usage_disabled_reason")),
            using_extra_usage=value.get("using_extra_usage") is True,
        )


def parse(info: Any, now: float | None = None) -> PlanUsage | None:
    """A `rate_limit_info` object as a `PlanUsage`; None without a usable status."""
    if not isinstance(info, dict):
        return None
    status = _code(info.get("status"))
    if status is None:
        return None
    windows: dict[str, Window] = {}
    unified = info.get("unifiedWindows")
    if isinstance(unified, dict):
        for name, item in list(unified.items())[:16]:
            window = _window(name, item) if isinstance(item, dict) else None
            if window is not None:
                windows[window.name] = window
    kind = _code(info.get("rateLimitType"))
    resets_at = _time(info.get("resetsAt"))
    if kind is not None and kind not in windows and _share(info.get("utilization")) is not None:
        windows[kind] = Window(kind, _share(info.get("utilization")), resets_at, None,
                               _share(info.get("surpassedThreshold")))
    return PlanUsage(
        seen_at=int(time.time() if now is None else now), status=status, window=kind, resets_at=resets_at,
        windows=tuple(windows.values()), extra_usage_status=_code(info.get("overageStatus")),
        extra_usage_resets_at=_time(info.get("overageResetsAt")),
        extra_usage_disabled_reason=_code(info.get("overageDisabledReason")),
        using_extra_usage=info.get("isUsingOverage") is True or info.get("overageInUse") is True,
    )


def _window(name: Any, item: Mapping[str, Any]) -> Window | None:
    name = _code(name)
    if name is None:
        return None
    return Window(name, _share(item.get("utilization")), _time(item.get("resetsAt")), _code(item.get("status")),
                  _share(item.get("surpassedThreshold")))


def _stored_window(item: Any) -> Window | None:
    if not isinstance(item, dict) or _code(item.get("name")) is None:
        return None
    return Window(item["name"], _share(item.get("utilization")), _time(item.get("resets_at")),
                  _code(item.get("status")),
                  _share(item.get("surpassed_threshold")))


def _code(value: Any) -> str | None:
    return value if isinstance(value, str) and _CODE.fullmatch(value) else None


def _share(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return round(float(value), 4) if 0 <= value <= 100 else None


def _time(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return int(value) if 0 < value < 10**11 else None


# --- the guard -------------------------------------------------------------------------


def window_name(name: str | None) -> str:
    return WINDOW_NAMES.get(name or "", name or "plan")


def local_time(when: int) -> str:
    """`when` (unix time) in the person's local time zone."""
    return time.strftime("%Y-%m-%d %H:%M %Z", time.localtime(when)).strip()


def refusal(usage: PlanUsage | None, now: float | None = None) -> ErrorEvent | None:
    """The error a request gets under `refuse` while `usage` says it would draw on extra
    usage; None when it would not, or once the window has reset."""
    if usage is None or not usage.draws_extra_usage():
        return None
    ends = usage.episode_end()
    if ends <= (time.time() if now is None else now):
        return None
    return ErrorEvent(
        f"extra usage is refused (extra usage: refuse): the Claude plan's {window_name(usage.window)} window "
        "is used up "
        f"and further requests would draw on extra usage; requests resume when it resets at {local_time(ends)}",
        code="quota_exceeded", retryable=False, resets_at=ends)


def warning(usage: PlanUsage) -> str:
    """The one notice of `warn` for an episode of extra usage."""
    return (f"requests now draw on the Claude plan's extra usage: the {window_name(usage.window)} window is used up "
            f"until {local_time(usage.episode_end())} (set extra usage to refuse to stop them)")
