"""Frameworks on LiteLLM, each as its users write it, on `claude-code/<model>` after
`register()`: the real framework, the real `claude` CLI, the fake Anthropic API on 127.0.0.1.

DSPy: a `Predict` with a typed signature (its ChatAdapter parses the fields out of the
answer). smolagents and CrewAI are not here: see docs/hosts/litellm.md for why.
"""

from __future__ import annotations

import json
import sys

import pytest

from claude_transport_support import FAKES

sys.path.insert(0, str(FAKES))
import fake_anthropic as fa

from peers import requires_claude

pytestmark = [pytest.mark.slow, requires_claude, pytest.mark.usefixtures("registered"),
              # litellm's own types (TypedDicts of its sign-ins), when it builds a response
              pytest.mark.filterwarnings("ignore:Item.* using the `ReadOnly` qualifier:UserWarning")]


@pytest.fixture(autouse=True)
def dspy_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DSPY_CACHEDIR", str(tmp_path / "dspy-cache"))


def test_a_dspy_predict_with_a_typed_signature(api):
    import dspy

    class Multiply(dspy.Signature):
        """Answer the question with a number."""

        question: str = dspy.InputField()
        answer: int = dspy.OutputField()

    api.push(fa.text("[[ ## answer ## ]]\n42\n\n[[ ## completed ## ]]"))
    with dspy.context(lm=dspy.LM("claude-code/sonnet", cache=False)):
        result = dspy.Predict(Multiply)(question="six times seven?")
    assert result.answer == 42
    (request,) = api.messages_requests()
    assert "six times seven?" in json.dumps(request["messages"]) and "answer" in json.dumps(request["messages"])
