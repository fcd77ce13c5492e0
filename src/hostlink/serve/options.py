"""The generation fields of a request: honoured, refused, or accepted because they have no effect.

Claude Code sets the answer's length (`CLAUDE_CODE_MAX_OUTPUT_TOKENS`) and its effort
(`--effort`) per request; those fields are honoured through the request's
`GenerationSettings`. It offers no control over sampling (temperature,
top-p/top-k, penalties, seeds, log-probabilities) or a thinking budget
(the CLI thinks adaptively): such a field is accepted only at the value that means "the
default", any other value is a 400 that names it. Fields that cannot change the answer
(metadata, caching and tracing hints) are not read at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hostlink.host import GenerationSettings, ModelSpec
from hostlink.serve.core import field, invalid, one_of

EFFORTS = ("low", "medium", "high", "xhigh", "max")
# OpenAI's reasoning effort levels -> the CLI's --effort levels
OPENAI_EFFORTS = {"none": "low", "minimal": "low", "low": "low", "medium": "medium", "high": "high",
                  "xhigh": "xhigh"}

# field -> the values that mean "the default" (anything else would change the answer)
_DEFAULT_ONLY: dict[str, tuple[Any, ...]] = {
    "temperature": (1, 1.0), "top_p": (1, 1.0), "top_k": (),
    "presence_penalty": (0, 0.0), "frequency_penalty": (0, 0.0), "seed": (), "logit_bias": ({},),
    "logprobs": (False,), "top_logprobs": (0,), "modalities": (("text",),), "audio": (), "prediction": (),
}
_WIRE_FIELDS = {
    "anthropic": ("temperature", "top_p", "top_k"),
    "chat": ("temperature", "top_p", "presence_penalty", "frequency_penalty", "seed", "logit_bias",
             "logprobs", "top_logprobs", "modalities", "audio", "prediction"),
    "responses": ("temperature", "top_p", "top_logprobs"),
}


def refuse_non_defaults(payload: Mapping[str, Any], wire: str) -> None:
    """A 400 naming the first sampling field whose value the CLI cannot honour."""
    for name in _WIRE_FIELDS[wire]:
        value = payload.get(name)
        if value is None:
            continue
        if (tuple(value) if isinstance(value, list) else value) not in _DEFAULT_ONLY[name]:
            raise invalid(name, "Claude Code cannot set this; leave it out (or at its default)")


def max_output(value: Any, name: str, model: ModelSpec) -> int | None:
    """The answer's token cap (at most the model's own), or None when not given."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid(name, "expected an integer")
    if value < 1:
        raise invalid(name, "must be at least 1")
    return min(value, model.max_tokens) if model.max_tokens else value


def settings(max_tokens: int | None, effort: str | None) -> GenerationSettings:
    return GenerationSettings(max_output_tokens=max_tokens, effort=effort)


def openai_effort(value: Any, path: str) -> str | None:
    if value is None:
        return None
    return OPENAI_EFFORTS[one_of(value, tuple(OPENAI_EFFORTS), path)]


ONE_CALL = "Call at most one tool in this answer."


def parallel_calls(payload: Mapping[str, Any]) -> str | None:
    """`parallel_tool_calls: false` as an instruction (Claude may otherwise propose several)."""
    if field(payload, "parallel_tool_calls", bool, "", default=True):
        return None
    return ONE_CALL


def anthropic_settings(payload: Mapping[str, Any], model: ModelSpec, max_tokens: int) -> GenerationSettings:
    """`max_tokens`, `output_config.effort`; `thinking` only as the CLI does it (adaptive)."""
    refuse_non_defaults(payload, "anthropic")
    thinking = field(payload, "thinking", dict, "")
    if thinking is not None and thinking.get("type") != "adaptive":
        raise invalid("thinking.type", "Claude Code always thinks adaptively and cannot take a thinking budget or "
                                       "turn thinking off; send {\"type\": \"adaptive\"} or leave it out "
                                       "(output_config.effort sets how hard it thinks)")
    config = field(payload, "output_config", dict, "", default={})
    effort = config.get("effort")
    if effort is not None:
        one_of(effort, EFFORTS, "output_config.effort")
    return settings(max_output(max_tokens, "max_tokens", model), effort)
