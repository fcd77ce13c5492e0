"""Frameworks on LiteLLM, each as its users write it, on `claude-code/<model>` after
`register()`: the real framework, the real `claude` CLI, the fake Anthropic API on 127.0.0.1.

DSPy: a `Predict` with a typed signature (its ChatAdapter parses the fields out of the
answer). smolagents and CrewAI are not here: see docs/hosts/litellm.md for why.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from claude_transport_support import FAKES, live_processes_mentioning
from hostlink.claude_code import metrics
from hostlink.claude_code.process import ClaudeTransportOptions

sys.path.insert(0, str(FAKES))
import fake_anthropic as fa

from peers import CLAUDE, requires_claude

pytestmark = [pytest.mark.slow, requires_claude,
              # litellm's own types (TypedDicts of its sign-ins), when it builds a response
              pytest.mark.filterwarnings("ignore:Item.* using the `ReadOnly` qualifier:UserWarning")]


@pytest.fixture(autouse=True)
def registered(api, home, runtime_dir, tmp_path, monkeypatch, litellm, register):
    monkeypatch.setenv("DSPY_CACHEDIR", str(tmp_path / "dspy-cache"))
    before = litellm.custom_provider_map
    environ = {"HOME": str(home), "PATH": f"{Path(CLAUDE).parent}{os.pathsep}{os.environ['PATH']}"}
    register(home, options=ClaudeTransportOptions(test_api_base_url=api.base_url, test_api_key="sk-fake-test"),
             environ=environ)
    yield
    litellm.custom_provider_map = before
    assert live_processes_mentioning(str(runtime_dir)) == []
    (runtime_dir / metrics.FILE_NAME).unlink(missing_ok=True)


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
