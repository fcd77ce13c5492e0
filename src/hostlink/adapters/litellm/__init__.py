"""The LiteLLM host: `claude-code/<model>` as a LiteLLM model name, so `litellm.completion`
and the frameworks on it (DSPy, for one) use the signed-in `claude` CLI.

    import litellm
    from hostlink.adapters.litellm import register
    register()
    litellm.completion(model="claude-code/sonnet", messages=[{"role": "user", "content": "hi"}])

Needs the `litellm` extra (`pip install 'hostlink[litellm]'`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from hostlink.adapters.claude_request import ClaudeSettings, extra_usage_problem
from hostlink.adapters.litellm.provider import ClaudeCodeLLM
from hostlink.claude_code import PROVIDER_NAME

if TYPE_CHECKING:
    from hostlink.claude_code import ClaudeTransportOptions

__all__ = ["ClaudeCodeLLM", "register"]


def register(cwd: Path | str | None = None, *, extra_usage: str | None = None,
             options: ClaudeTransportOptions | None = None, environ: Mapping[str, str] | None = None) -> ClaudeCodeLLM:
    """Make `claude-code/<alias or family id>` a LiteLLM model (again: a second call replaces
    the first's settings). The keyword arguments are those `ClaudeCodeModel` takes: `cwd`
    (where `claude` runs; default: the current directory at each request), `extra_usage`
    (`allow` | `warn` | `refuse`), and for tests `options` and `environ`."""
    import litellm

    problem = extra_usage_problem(extra_usage)
    if problem:
        raise ValueError(problem)
    handler = ClaudeCodeLLM(ClaudeSettings(cwd=Path(cwd) if cwd is not None else None, extra_usage=extra_usage,
                                           options=options, environ=environ))
    others = [item for item in litellm.custom_provider_map if item["provider"] != PROVIDER_NAME]
    litellm.custom_provider_map = [*others, {"provider": PROVIDER_NAME, "custom_handler": handler}]
    return handler
