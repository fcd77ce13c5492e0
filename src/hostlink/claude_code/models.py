"""The models the provider offers: the `claude` CLI's own aliases, resolved by the CLI.

Facts from the model catalog built into `@anthropic-ai/claude-code` 2.1.332 (see
`hostlink.claude_code.compatibility` for what each alias resolved to there): every
current model has a 1,000,000-token context window, 128,000 output tokens, adaptive
thinking and image input. The id is passed to `claude --model` unchanged, so the CLI, not
hostlink, decides which model an alias means.
"""

from __future__ import annotations

from hostlink.host import ModelSpec

PROVIDER_NAME = "claude-code"

_CONTEXT_WINDOW = 1_000_000
_MAX_OUTPUT_TOKENS = 128_000


def _alias(model_id: str, name: str) -> ModelSpec:
    return ModelSpec(
        id=model_id,
        name=name,
        reasoning=True,
        input=("text", "image"),
        context_window=_CONTEXT_WINDOW,
        max_tokens=_MAX_OUTPUT_TOKENS,
    )


MODELS: tuple[ModelSpec, ...] = (
    _alias("opus", "Claude Opus (Claude Code)"),
    _alias("sonnet", "Claude Sonnet (Claude Code)"),
    _alias("haiku", "Claude Haiku (Claude Code)"),
    _alias("fable", "Claude Fable (Claude Code)"),
)
