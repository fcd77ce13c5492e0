"""Frameworks on LiteLLM, each as its users write it, on `claude-code/<model>` after
`register()`: the real framework, the real `claude` CLI, the fake Anthropic API on 127.0.0.1.

DSPy: a `Predict` with a typed signature (its ChatAdapter parses the fields out of the
answer). smolagents: a `ToolCallingAgent` on `LiteLLMModel` (it sends stop sequences on every
step, and its roles as a str enum). CrewAI is not here: see docs/hosts/litellm.md for why.
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


def test_a_smolagents_tool_calling_agent_runs_its_tool_and_answers(api):
    from smolagents import LiteLLMModel, ToolCallingAgent, tool

    ran: list[str] = []

    @tool
    def weather(city: str) -> str:
        """The weather in a city.

        Args:
            city: The city's name.
        """
        ran.append(city)
        return f"sunny in {city}"

    api.push(fa.tool_use("mcp__hostlink__weather", {"city": "Paris"}),
             fa.tool_use("mcp__hostlink__final_answer", {"answer": "Sunny in Paris."}))
    agent = ToolCallingAgent(tools=[weather], model=LiteLLMModel(model_id="claude-code/sonnet"), max_steps=3,
                             verbosity_level=0)
    assert agent.run("What is the weather in Paris?") == "Sunny in Paris."
    assert ran == ["Paris"]
    first, second = api.messages_requests()
    assert "What is the weather in Paris?" in json.dumps(first["messages"])
    assert "sunny in Paris" in json.dumps(second["messages"])  # the observation went back to Claude
