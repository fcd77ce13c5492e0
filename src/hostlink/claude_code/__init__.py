"""The Claude Code provider extension, as hosts import it.

Every name here is loaded on first use, so importing this package starts nothing and imports
nothing heavy; `describe_usage` and `usage_as_json` are `usage`'s
`describe` and `as_json`, named for what they show.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hostlink.host.lazy import lazy_names

if TYPE_CHECKING:
    from hostlink.claude_code.doctor import diagnose, write_report
    from hostlink.claude_code.extension import ClaudeCodeExtension
    from hostlink.claude_code.guard import PlanGuard
    from hostlink.claude_code.models import MODELS, PROVIDER_NAME
    from hostlink.claude_code.plan import EXTRA_USAGE_MODES, ExtraUsageSettingError, PlanUsage, refusal
    from hostlink.claude_code.process import ClaudeTransportOptions
    from hostlink.claude_code.rounds import ConversationSessions
    from hostlink.claude_code.usage import as_json as usage_as_json
    from hostlink.claude_code.usage import describe as describe_usage

_WHERE = {
    "ClaudeCodeExtension": ("hostlink.claude_code.extension", "ClaudeCodeExtension"),
    "ClaudeTransportOptions": ("hostlink.claude_code.process", "ClaudeTransportOptions"),
    "ConversationSessions": ("hostlink.claude_code.rounds", "ConversationSessions"),
    "EXTRA_USAGE_MODES": ("hostlink.claude_code.plan", "EXTRA_USAGE_MODES"),
    "ExtraUsageSettingError": ("hostlink.claude_code.plan", "ExtraUsageSettingError"),
    "MODELS": ("hostlink.claude_code.models", "MODELS"),
    "PROVIDER_NAME": ("hostlink.claude_code.models", "PROVIDER_NAME"),
    "PlanGuard": ("hostlink.claude_code.guard", "PlanGuard"),
    "PlanUsage": ("hostlink.claude_code.plan", "PlanUsage"),
    "describe_usage": ("hostlink.claude_code.usage", "describe"),
    "diagnose": ("hostlink.claude_code.doctor", "diagnose"),
    "refusal": ("hostlink.claude_code.plan", "refusal"),
    "usage_as_json": ("hostlink.claude_code.usage", "as_json"),
    "write_report": ("hostlink.claude_code.doctor", "write_report"),
}
__getattr__ = lazy_names(__name__, _WHERE)

__all__ = [
    "EXTRA_USAGE_MODES",
    "MODELS",
    "PROVIDER_NAME",
    "ClaudeCodeExtension",
    "ClaudeTransportOptions",
    "ConversationSessions",
    "ExtraUsageSettingError",
    "PlanGuard",
    "PlanUsage",
    "describe_usage",
    "diagnose",
    "refusal",
    "usage_as_json",
    "write_report",
]
