"""The llm host's chains on one lasting host session, with the real `claude` CLI against the
fake Anthropic API: each round after the first takes the child prewarmed while llm ran the
tool, and the child the last round started ahead for a next round is stopped when that round
answers without tool calls, long before the idle bound, while the host lives."""

from __future__ import annotations

import os
import sys
import time

import llm
import pytest

from claude_transport_support import FAKES, live_processes_mentioning
from hostlink.adapters.llm.llm_host import LlmHost
from hostlink.claude_code import metrics, prewarm
from hostlink.claude_code.extension import ClaudeCodeExtension
from hostlink.claude_code.process import ClaudeTransportOptions
from peers import CLAUDE_BIN, requires_claude

sys.path.insert(0, str(FAKES))
import fake_anthropic as fa

pytestmark = [pytest.mark.slow, requires_claude]



def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def test_a_chain_takes_prewarmed_children_and_leaves_no_idle_one_when_it_ends(api, home, runtime_dir, cold_starts):
    extension = ClaudeCodeExtension(
        options=ClaudeTransportOptions(test_api_base_url=api.base_url, test_api_key="sk-fake-test"),
        environ={"HOME": str(home), "PATH": f"{CLAUDE_BIN}{os.pathsep}{os.environ['PATH']}"})
    host = LlmHost([extension])
    try:
        model = {model.model_id: model for model in host.models()}["claude-code/sonnet"]
        api.push(*(fa.tool_use("mcp__hostlink__weather", {"city": city}) for city in ("Paris", "Rome")),
                 fa.text("Sunny in both."))
        assert model.chain("weather?", tools=[llm.Tool.function(weather)]).text() == "Sunny in both."
        assert len(cold_starts) == 1  # the later rounds took their prewarmed claude
        ended = time.monotonic()
        while live_processes_mentioning(str(runtime_dir)):
            assert time.monotonic() - ended < 10, "an idle claude outlived its conversation"
            time.sleep(0.1)
        assert prewarm.IDLE_SECONDS - (time.monotonic() - ended) > 15  # stopped, not left for its idle bound
    finally:
        host.close()
    assert live_processes_mentioning(str(runtime_dir)) == []
    (runtime_dir / metrics.FILE_NAME).unlink(missing_ok=True)
