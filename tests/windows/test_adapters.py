"""The adapters' tool rounds on Windows with the real claude.exe against the fake Anthropic API on
127.0.0.1: LangChain's `ChatClaudeCode` (bind_tools), LiteLLM's `claude-code/<model>`, pydantic-ai's
`ClaudeCodeModel` and llm's `claude-code/sonnet` each carry one conversation with a tool round. The
model proposes a call; while the tool runs (the test runs it, or the framework does), the next
round's claude.exe is already up below this process, in its Job Object; the second round takes it
and answers from the tool's result. Then no process is left below this process and no private
file in the runtime folder (the doctor's last-request facts are kept on purpose).

The Linux versions, with the prewarm's counts and bounds, are tests/adapters/test_adapter_rounds.py,
test_pydantic_ai.py and test_llm_prewarm.py."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import fake_anthropic as fa  # tests/fakes, on the path through the conftest
import pytest

from windows_support import WINDOWS_ONLY, descendants, end_leftovers, profile_environ, wait_until

pytestmark = WINDOWS_ONLY

CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
WEATHER = {"type": "function", "function": {"name": "weather", "description": "The weather in a city.",
                                            "parameters": CITY}}
RESULT = "sunny-rome-4711"  # the tool's result, which the second round must carry to Claude
ANSWER = "Sunny in Rome."
START_SECONDS = 60  # a claude.exe start under Wine on a busy machine
GONE_SECONDS = 10  # the acceptance bound for a conversation's claude.exe to be gone


def weather(city: str) -> str:
    """The weather in a city."""
    return RESULT if city == "Rome" else f"no weather for {city}"


@dataclass
class Claude:
    """What an adapter needs to run claude.exe on the fake API, and the process checks."""

    api: fa.FakeAnthropic
    home: Path
    runtime: Path
    environ: dict[str, str]
    options: object
    before: frozenset[int]  # what already ran below this process

    def below(self) -> dict[int, str]:
        """The processes this test started below this process (claude.exe, its proposal server)."""
        return {pid: name for pid, name in descendants(os.getpid()).items() if pid not in self.before}

    def run_tool(self, city: str) -> str:
        """The tool, run once the next round's claude.exe is up (prewarmed while a tool runs)."""
        wait_until(lambda: "claude.exe" in self.below().values(), START_SECONDS,
                   "no claude.exe was started ahead of the next round")
        return weather(city)

    def nothing_left(self) -> None:
        wait_until(lambda: not self.below(), GONE_SECONDS, f"left running after the answer: {self.below()}")

    def answered_from_the_tool(self, answer: str) -> None:
        from hostlink.claude_code import metrics

        assert answer == ANSWER
        assert RESULT in json.dumps(self.api.messages_requests()[-1]["messages"])
        assert metrics.last()["child"] == "prewarmed"  # the second round took the claude.exe started ahead
        self.nothing_left()  # the answer ended the conversation: nothing waits for a next round


@pytest.fixture
def claude(fake_api, claude_exe, tmp_path, monkeypatch):
    """A profile and runtime folder of the test's own, the fake API scripted for one tool round
    (a call of `weather` for Rome, then the answer); afterwards nothing below this process and
    no private file left."""
    from hostlink.claude_code import metrics
    from hostlink.claude_code.process import ClaudeTransportOptions

    runtime = tmp_path / "runtime"
    monkeypatch.setenv("HOSTLINK_RUNTIME_DIR", str(runtime))
    home = tmp_path / "home"
    fake_api.push(fa.tool_use("mcp__hostlink__weather", {"city": "Rome"}), fa.text(ANSWER))
    claude = Claude(fake_api, home, runtime, profile_environ(home, tmp_path / "temp", claude_exe),
                    ClaudeTransportOptions(test_api_base_url=fake_api.base_url, test_api_key="sk-fake-test"),
                    frozenset(descendants(os.getpid())))
    try:
        yield claude
        claude.nothing_left()
    finally:
        end_leftovers(claude.below())
    left = sorted(p.name for p in runtime.iterdir() if p.name != metrics.FILE_NAME) if runtime.exists() else []
    assert left == [], f"private state left: {left}"


def test_langchain_bind_tools_round(claude):
    from langchain_core.messages import HumanMessage, ToolMessage

    from hostlink.adapters.langchain import ChatClaudeCode

    chat = ChatClaudeCode(model="sonnet", cwd=claude.home, environ=claude.environ, options=claude.options)
    try:
        bound = chat.bind_tools([WEATHER])
        messages: list = [HumanMessage("Weather in Rome?")]
        reply = bound.invoke(messages)
        [call] = reply.tool_calls
        assert call["name"] == "weather" and call["args"] == {"city": "Rome"}
        messages += [reply, ToolMessage(claude.run_tool(**call["args"]), tool_call_id=call["id"])]
        claude.answered_from_the_tool(bound.invoke(messages).content)
    finally:
        chat.close()


def test_litellm_completion_round(claude):
    import litellm

    from hostlink.adapters.litellm import register

    before = litellm.custom_provider_map
    handler = register(claude.home, options=claude.options, environ=claude.environ)
    try:
        messages: list = [{"role": "user", "content": "Weather in Rome?"}]
        message = litellm.completion(model="claude-code/sonnet", messages=messages, tools=[WEATHER]).choices[0].message
        [call] = message.tool_calls
        assert call.function.name == "weather" and json.loads(call.function.arguments) == {"city": "Rome"}
        messages += [message.model_dump(), {"role": "tool", "tool_call_id": call.id,
                                            "content": claude.run_tool(**json.loads(call.function.arguments))}]
        answer = litellm.completion(model="claude-code/sonnet", messages=messages, tools=[WEATHER])
        claude.answered_from_the_tool(answer.choices[0].message.content)
    finally:
        handler.close()
        litellm.custom_provider_map = before


def test_pydantic_ai_agent_round(claude):
    import asyncio

    from pydantic_ai import Agent

    from hostlink.adapters.pydantic_ai import ClaudeCodeModel

    agent = Agent(ClaudeCodeModel("sonnet", cwd=claude.home, options=claude.options, environ=claude.environ))
    cities = []

    @agent.tool_plain
    def weather(city: str) -> str:  # a plain function: pydantic-ai runs it in a thread
        """The weather in a city."""
        cities.append(city)
        return claude.run_tool(city)

    result = asyncio.run(agent.run("Weather in Rome?"))  # not run_sync, which leaves its loop open
    assert cities == ["Rome"]
    claude.answered_from_the_tool(result.output)


def test_llm_chain_round(claude):
    import llm

    from hostlink.adapters.llm.llm_host import LlmHost
    from hostlink.claude_code.extension import ClaudeCodeExtension

    host = LlmHost([ClaudeCodeExtension(options=claude.options, environ=claude.environ)])
    try:
        model = {model.model_id: model for model in host.models()}["claude-code/sonnet"]
        chain = model.chain("Weather in Rome?", tools=[llm.Tool.function(claude.run_tool, name="weather",
                                                                          description=weather.__doc__)])
        claude.answered_from_the_tool(chain.text())
    finally:
        host.close()
