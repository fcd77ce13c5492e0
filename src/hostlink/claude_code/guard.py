"""The session's view of the Claude plan: the latest usage report and the extra-usage guard.

The latest report is the newer of the one this session saw and the one any request of this
user stored last (`hostlink.claude_code.metrics.last_plan`): the plan belongs to the
account, so a report seen by another process counts too. The guard runs as the extension's
`before_provider_request` handler, so a refusal comes before anything of the request is built
and before any `claude` starts. Its mode comes from the request (`extra_usage` in the
context's options: the llm model option), else the host (`hostlink serve --extra-usage`,
`ClaudeCodeModel(extra_usage=…)`), else `HOSTLINK_CLAUDE_EXTRA_USAGE`, else `warn`.

Notices: `warn` tells the person once per episode (a window's exhaustion until its reset)
that requests draw on extra usage; `refuse` tells once that the request just made drew on it
and what follows; any mode tells once when a window passes its warning threshold. `allow`
says nothing about extra usage.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from hostlink.claude_code import plan
from hostlink.claude_code.models import PROVIDER_NAME
from hostlink.host import Context, ErrorEvent, Notifier, ProviderRefused, ProviderRequest

OPTION = "extra_usage"


class PlanGuard:
    """`mode` is the host's setting (None: the environment decides); `environ` for tests."""

    def __init__(self, mode: str | None = None, environ: Mapping[str, str] | None = None) -> None:
        if mode is not None:
            plan.extra_usage_mode(mode, "extra_usage", {})  # refused at once, naming the setting
        self._mode = mode
        self._environ = environ
        self._seen: plan.PlanUsage | None = None
        self._told: set[tuple[object, ...]] = set()
        self.notifier: Notifier | None = None

    def mode(self, options: Mapping[str, str] | None = None) -> str:
        """The mode for a request with `options`; raises `plan.ExtraUsageSettingError`."""
        unknown = sorted(set(options or ()) - {OPTION})
        if unknown:
            raise plan.ExtraUsageSettingError(f"the Claude Code provider has no option {unknown[0][:40]!r}")
        if options and OPTION in options:
            return plan.extra_usage_mode(options[OPTION], f"option {OPTION}", {})
        if self._mode is not None:
            return self._mode
        return plan.extra_usage_mode(None, "", os.environ if self._environ is None else self._environ)

    def latest(self) -> plan.PlanUsage | None:
        from hostlink.claude_code import metrics  # the private runtime files: at the first request
        from hostlink.host.private import PrivateStateError

        try:
            stored = metrics.last_plan()
        except (PrivateStateError, OSError):  # an unusable runtime root: what this session saw
            stored = None
        seen = self._seen
        if stored is None or (seen is not None and seen.seen_at >= stored.seen_at):
            return seen
        return stored

    def refusing(self, mode: str) -> ErrorEvent | None:
        return plan.refusal(self.latest()) if mode == "refuse" else None

    async def before_request(self, request: ProviderRequest) -> Context | None:
        """The `before_provider_request` handler: refuse or warn; never replaces the context."""
        if request.provider != PROVIDER_NAME:
            return None
        try:
            mode = self.mode(request.context.options)
        except plan.ExtraUsageSettingError as error:
            raise ProviderRefused(ErrorEvent(str(error), code="invalid_request")) from None
        refusal = self.refusing(mode)
        if refusal is not None:
            raise ProviderRefused(refusal)
        usage = self.latest()
        if mode == "warn" and usage is not None and plan.refusal(usage) is not None:
            self._tell_once(("extra", usage.window, usage.episode_end()), plan.warning(usage))
        return None

    def observe(self, usage: plan.PlanUsage, mode: str) -> None:
        """A report of a request running under `mode`."""
        if self._seen is None or usage.seen_at >= self._seen.seen_at:
            self._seen = usage
        episode = (usage.window, usage.episode_end())
        if usage.draws_extra_usage():
            if mode == "warn":
                self._tell_once(("extra", *episode), plan.warning(usage))
            elif mode == "refuse":
                what = "this request drew on the Claude plan's extra usage" if usage.using_extra_usage else \
                    "only the Claude plan's extra usage would continue"
                self._tell_once(("refuse", *episode), (
                    f"{what} ({plan.window_name(usage.window)} window used up); further requests are refused "
                    f"until {plan.local_time(usage.episode_end())}"))
        elif usage.status == "allowed_warning":
            window = next((w for w in usage.windows if w.name == usage.window), None)
            used = f" is {round(window.utilization * 100)}% used" if window and window.utilization is not None else \
                " is nearly used up"
            self._tell_once(("threshold", *episode),
                            f"the Claude plan's {plan.window_name(usage.window)} window{used}; "
                            f"it resets at {plan.local_time(usage.episode_end())}")

    def _tell_once(self, key: tuple[object, ...], message: str) -> None:
        if key in self._told or self.notifier is None:
            return
        self._told.add(key)
        self.notifier.notify(message, "warning")
