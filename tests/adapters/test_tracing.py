"""Traces of a real pydantic-ai agent run (its `Instrumentation` capability, what `instrument=True`
became) on the real `claude` CLI against the fake Anthropic API, with the OpenTelemetry SDK's
in-memory exporter: hostlink's `chat` spans nest under pydantic-ai's own, each with its phases
and the GenAI attributes, the `mcp` tool's span around the MCP SDK's call, one trace in all; no
prompt, argument or path in hostlink's spans unless the GenAI content switch is on. The same run
counted exactly in the OpenTelemetry metrics (the SDK's in-memory reader). A LangChain tool loop's
spans under the application's own span."""

from __future__ import annotations

import itertools
import os
import sys
from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.capabilities import Instrumentation

from claude_transport_support import FAKES
from hostlink.adapters.pydantic_ai import ClaudeCodeModel, HostlinkMcp
from hostlink.claude_code import metrics
from hostlink.claude_code.process import ClaudeTransportOptions
from hostlink.host.telemetry import CONTENT_SWITCH
from llm_support import leftover_processes
from peers import CLAUDE, requires_claude
from tracing_support import PHASES, attribute_text, children, metering, of_scope, points, recording

sys.path.insert(0, str(FAKES))
import fake_anthropic as fa

ARGUMENT = "Zanzibar-4711"


@pytest.fixture(autouse=True)
def doctor_facts_kept(runtime_dir):
    """The doctor's last-request facts are kept on purpose: the only private file a run leaves."""
    yield
    (runtime_dir / metrics.FILE_NAME).unlink(missing_ok=True)

PROMPT = "what is the weather in the secret city?"


def new_claude_model(api, home: Path) -> ClaudeCodeModel:
    return ClaudeCodeModel("sonnet", cwd=home,
                           options=ClaudeTransportOptions(test_api_base_url=api.base_url, test_api_key="sk-fake-test"),
                           environ={"HOME": str(home),
                                    "PATH": f"{Path(CLAUDE).parent}{os.pathsep}{os.environ['PATH']}"})


async def weather_then_mcp_run(api, home, project, numbers: list | None = None):
    """Round 1 proposes the function tool, round 2 the mcp tool on the demo server, round 3 answers;
    the metrics collected before the agent's MCP client stops go to `numbers`."""
    exporter = recording()
    reader = metering()
    agent = Agent(new_claude_model(api, home), capabilities=[Instrumentation()],
                  toolsets=[HostlinkMcp(trust_project=True, cwd=project)])

    @agent.tool_plain
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    api.push(fa.tool_use("mcp__hostlink__weather", {"city": ARGUMENT}),
             fa.tool_use("mcp__hostlink__mcp", {"action": "call", "server": "demo", "tool": "echo",
                                                "args": {"text": ARGUMENT}}),
             fa.text("It is sunny."))
    async with agent:
        result = await agent.run(PROMPT)
        if numbers is not None:
            numbers.append(points(reader.get_metrics_data()))
    assert result.output == "It is sunny."
    return exporter.get_finished_spans()


@pytest.mark.slow
@requires_claude
@pytest.mark.anyio
async def test_an_agent_run_is_one_trace_with_the_provider_phases_and_the_mcp_call(
        api, home, runtime_dir, project, marker, monkeypatch):
    monkeypatch.delenv(CONTENT_SWITCH, raising=False)
    spans = await weather_then_mcp_run(api, home, project)
    assert len({span.context.trace_id for span in spans}) == 1  # one trace: the agent run's
    chats = [span for span in of_scope(spans, "hostlink") if span.name.startswith("chat ")]
    assert [span.name for span in chats] == ["chat sonnet"] * 3
    by_id = {span.context.span_id: span for span in spans}
    for round_number, (chat, finish) in enumerate(zip(chats, ["tool_call", "tool_call", "stop"], strict=True), 1):
        parent = by_id[chat.parent.span_id]
        assert parent.instrumentation_scope.name != "hostlink"  # under pydantic-ai's own span
        attributes = chat.attributes
        assert attributes["gen_ai.operation.name"] == "chat" and attributes["gen_ai.provider.name"] == "claude-code"
        assert attributes["gen_ai.request.model"] == attributes["gen_ai.response.model"] == "sonnet"
        assert attributes["gen_ai.response.finish_reasons"] == (finish,)
        assert attributes["hostlink.conversation.round"] == round_number
        assert attributes["gen_ai.usage.input_tokens"] > 0 and attributes["gen_ai.usage.output_tokens"] > 0
        assert "gen_ai.usage.cache_read.input_tokens" in attributes and isinstance(attributes["hostlink.prewarmed"],
                                                                                      bool)
        phases = children(spans, chat)
        assert [phase.name for phase in phases] == PHASES
        assert phases[0].attributes["hostlink.claude.child"] in ("fresh", "prewarmed", "replaced")
        assert all(a.end_time <= b.start_time for a, b in itertools.pairwise(phases))  # one after another
    [action] = [span for span in of_scope(spans, "hostlink") if span.name == "mcp call"]
    assert action.attributes["hostlink.mcp.server"] == "demo" and action.attributes["gen_ai.tool.name"] == "echo"
    assert action.attributes["mcp.method.name"] == "tools/call" and action.status.is_ok
    sdk_calls = [span for span in children(spans, action) if span.instrumentation_scope.name == "mcp-python-sdk"]
    names = [span.name for span in sdk_calls]  # the SDK's client spans nest under it: the server's setup, the call
    assert "MCP send server/discover" in names and names[-1] == "MCP send tools/call echo"
    ours = attribute_text(of_scope(spans, "hostlink"))
    for secret in (ARGUMENT, PROMPT, str(home), str(runtime_dir), str(project)):
        assert secret not in ours
    assert leftover_processes(marker) == []


@pytest.mark.slow
@requires_claude
@pytest.mark.anyio
async def test_with_the_content_switch_on_the_spans_hold_the_messages(api, home, runtime_dir, project, monkeypatch):
    monkeypatch.setenv(CONTENT_SWITCH, "true")
    spans = await weather_then_mcp_run(api, home, project)
    chats = [span for span in of_scope(spans, "hostlink") if span.name.startswith("chat ")]
    assert PROMPT in chats[0].attributes["gen_ai.input.messages"]
    assert ARGUMENT in chats[0].attributes["gen_ai.output.messages"]  # the proposed call's argument
    [action] = [span for span in of_scope(spans, "hostlink") if span.name == "mcp call"]
    assert ARGUMENT in action.attributes["gen_ai.tool.call.arguments"]
    assert ARGUMENT in action.attributes["gen_ai.tool.call.result"]


@pytest.mark.slow
@requires_claude
@pytest.mark.anyio
async def test_an_agent_run_is_counted_exactly_in_the_opentelemetry_metrics(api, home, runtime_dir, project):
    collected: list = []
    spans = await weather_then_mcp_run(api, home, project, collected)
    [found] = collected
    chats = [span for span in of_scope(spans, "hostlink") if span.name.startswith("chat ")]
    [requests] = found["gen_ai.client.operation.duration"]  # one series: every request answered, none failed
    assert requests.count == 3 and dict(requests.attributes) == {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "claude-code",
        "gen_ai.request.model": "sonnet", "gen_ai.response.model": "sonnet"}
    [first] = found["gen_ai.client.operation.time_to_first_chunk"]
    assert first.count == 3 and 0 < first.sum < requests.sum
    tokens = {point.attributes["gen_ai.token.type"]: point for point in found["gen_ai.client.token.usage"]}
    assert {kind: point.count for kind, point in tokens.items()} == {"input": 3, "output": 3}
    assert tokens["input"].sum == sum(chat.attributes["gen_ai.usage.input_tokens"] for chat in chats)
    assert tokens["output"].sum == sum(chat.attributes["gen_ai.usage.output_tokens"] for chat in chats)
    prewarm = {point.attributes["hostlink.outcome"]: point.value for point in found["hostlink.provider.prewarm"]}
    hits = sum(chat.attributes["hostlink.prewarmed"] for chat in chats)
    assert prewarm == {key: value for key, value in {"hit": hits, "miss": 3 - hits}.items() if value}
    [call] = found["mcp.client.operation.duration"]
    assert call.count == 1 and dict(call.attributes) == {
        "mcp.method.name": "tools/call", "hostlink.mcp.server": "demo", "gen_ai.tool.name": "echo"}
    states = {(point.attributes["hostlink.mcp.server"], point.attributes["hostlink.mcp.state"]): point.value
              for point in found["hostlink.mcp.server.state"]}
    assert states[("demo", "connected")] == 1
    assert "hostlink.mcp.reconnects" not in found  # nothing restarted
    assert ARGUMENT not in str(found) and PROMPT not in str(found) and str(home) not in str(found)


@pytest.mark.slow
@requires_claude
@pytest.mark.anyio
async def test_a_langchain_agent_s_spans_nest_under_the_application_s_span(make_chat, api, runtime_dir, project,
                                                                          marker, monkeypatch):
    """langchain-core has no OpenTelemetry integration (LangSmith's OpenTelemetry export makes
    spans of its runs that nothing else nests under): hostlink's spans join the application's
    span around the LangChain call, in one trace (docs/tracing.md says so)."""
    from langchain_core.messages import ToolMessage
    from opentelemetry import trace

    from hostlink.adapters.langchain import HostlinkMcpTools

    monkeypatch.delenv(CONTENT_SWITCH, raising=False)
    exporter = recording()
    chat = make_chat()
    api.push(fa.tool_use("mcp__hostlink__mcp", {"action": "call", "server": "demo", "tool": "echo",
                                                "args": {"text": ARGUMENT}}), fa.text("Echoed."))
    try:
        with trace.get_tracer("application").start_as_current_span("handle request") as application:
            async with HostlinkMcpTools(trust_project=True, cwd=project) as tools:
                bound = chat.bind_tools(tools)
                messages: list = [("user", PROMPT)]
                while (answer := await bound.ainvoke(messages)).tool_calls:  # LangChain's own tool loop
                    messages.append(answer)
                    messages.extend([await tools[0].ainvoke({**call, "type": "tool_call"})
                                     for call in answer.tool_calls])
    finally:
        chat.close()
    assert answer.content == "Echoed." and isinstance(messages[-1], ToolMessage)
    spans = exporter.get_finished_spans()
    assert {span.context.trace_id for span in spans} == {application.get_span_context().trace_id}
    ours = of_scope(spans, "hostlink")
    chats = [span for span in ours if span.name.startswith("chat ")]
    [action] = [span for span in ours if span.name == "mcp call"]
    root = application.get_span_context().span_id
    assert [span.parent.span_id for span in [*chats, action]] == [root, root, root]  # each directly under it
    assert [span.attributes["hostlink.conversation.round"] for span in chats] == [1, 2]
    assert [phase.name for phase in children(spans, chats[0])] == PHASES
    assert action.attributes["gen_ai.tool.name"] == "echo"
    assert ARGUMENT not in attribute_text(ours) and PROMPT not in attribute_text(ours)
    assert leftover_processes(marker) == []
