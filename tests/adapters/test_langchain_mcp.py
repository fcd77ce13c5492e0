"""`HostlinkMcpTools` in a real LangGraph agent loop (langgraph's `StateGraph`, `ToolNode` and
`tools_condition`), on `ChatClaudeCode` driving the real `claude` CLI against the fake
Anthropic API: the tools run the demo server over stdio, configured in a trusted project's
`.mcp.json`. After each test no `claude`, no server process and no private file is left.
"""

from __future__ import annotations

import json
import sys

import pytest
from langchain_core.messages import ToolMessage
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from claude_transport_support import FAKES, live_processes_mentioning
from hostlink.adapters.langchain import HostlinkMcpTools
from hostlink.claude_code import metrics
from llm_support import leftover_processes

sys.path.insert(0, str(FAKES))
import fake_anthropic as fa

from peers import requires_claude


@pytest.fixture(autouse=True)
def nothing_left(runtime_dir):
    yield
    assert live_processes_mentioning(str(runtime_dir)) == []
    (runtime_dir / metrics.FILE_NAME).unlink(missing_ok=True)


def agent(model, tools):
    """The tool-calling loop of a LangGraph agent: the model, then the tools while it calls any."""
    bound = model.bind_tools(tools)

    async def think(state: MessagesState) -> dict:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", think)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    return graph.compile()


@pytest.mark.anyio
async def test_the_proxy_face_is_the_one_bounded_mcp_tool(project, marker):
    async with HostlinkMcpTools(trust_project=True, cwd=project) as tools:
        (mcp,) = tools
        assert mcp.name == "mcp" and "reconnect" in mcp.args["action"]["enum"]
        result = await mcp.ainvoke({"action": "call", "server": "demo", "tool": "add", "args": {"a": 2, "b": 3}})
        assert "5" in result
        failed = await mcp.ainvoke({"type": "tool_call", "id": "c1", "name": "mcp",
                                    "args": {"action": "call", "server": "demo", "tool": "fail", "args": {}}})
        assert isinstance(failed, ToolMessage) and failed.status == "error" and "on purpose" in failed.content
        with pytest.raises(RuntimeError, match="use ainvoke"):
            mcp.invoke({"action": "status"})
        assert len(leftover_processes(marker)) == 1  # the connection lives while the tools are entered
    assert leftover_processes(marker) == []


@pytest.mark.anyio
async def test_the_tools_face_offers_each_server_tool_bounded(project, marker):
    async with HostlinkMcpTools(trust_project=True, cwd=project, expose="tools") as tools:
        by_name = {tool.name: tool for tool in tools}
        assert {"demo__echo", "demo__add", "demo__big_output", "demo__swatch"} <= set(by_name)
        assert "demo__app_refresh" not in by_name  # for apps only: not the model's
        assert await by_name["demo__add"].ainvoke({"a": 40, "b": 2}) == "42"
        big = await by_name["demo__big_output"].ainvoke({"lines": 20000})
        assert len(big) < 60_000 and "truncated" in big.lower()
        swatch = await by_name["demo__swatch"].ainvoke({"size": 4})
        assert [block["type"] for block in swatch if isinstance(block, dict)] == ["image"]


@pytest.mark.anyio
async def test_an_untrusted_project_configures_nothing(project, marker):
    async with HostlinkMcpTools(cwd=project, expose="tools") as tools:
        assert all(not tool.name.startswith("demo__") for tool in tools)
    async with HostlinkMcpTools(cwd=project) as (mcp,):
        failed = await mcp.ainvoke({"type": "tool_call", "id": "c1", "name": "mcp",
                                    "args": {"action": "call", "server": "demo", "tool": "echo", "args": {}}})
        assert failed.status == "error" and "demo" in failed.content
    assert leftover_processes(marker) == []


@pytest.mark.slow
@requires_claude
@pytest.mark.anyio
async def test_a_langgraph_agent_on_claude_runs_the_demo_server_through_the_mcp_tool(chat, api, project):
    arguments = {"action": "call", "server": "demo", "tool": "add", "args": {"a": 1234, "b": 4321}}
    api.push(fa.tool_use("mcp__hostlink__mcp", arguments), fa.text("The demo added them."))
    async with HostlinkMcpTools(trust_project=True, cwd=project) as tools:
        state = await agent(chat, tools).ainvoke({"messages": [("user", "add through the demo")]})
    assert state["messages"][-1].content == "The demo added them."
    first, second = api.messages_requests()
    assert "mcp__hostlink__mcp" in [tool["name"] for tool in first["tools"]]
    assert "5555" in json.dumps(second["messages"])  # the demo server's sum, in the history Claude gets


@pytest.mark.slow
@requires_claude
@pytest.mark.anyio
async def test_a_langgraph_agent_of_three_tool_rounds_on_the_servers_own_tools(chat, api, project):
    api.push(fa.tool_use("mcp__hostlink__demo__echo", {"text": "round one"}),
             fa.tool_use("mcp__hostlink__demo__add", {"a": 20, "b": 22}),
             fa.tool_use("mcp__hostlink__demo__fail", {"reason": "round three fails"}),
             fa.text("Three rounds done."))
    async with HostlinkMcpTools(trust_project=True, cwd=project, expose="tools") as tools:
        state = await agent(chat, tools).ainvoke({"messages": [("user", "three rounds, please")]})
    results = [message for message in state["messages"] if isinstance(message, ToolMessage)]
    assert [message.status for message in results] == ["success", "success", "error"]
    assert state["messages"][-1].content == "Three rounds done."
    last = json.dumps(api.messages_requests()[-1]["messages"])
    assert "round one" in last and "42" in last and "round three fails" in last


@pytest.mark.anyio
async def test_a_face_it_does_not_have_or_a_second_entry_is_refused_by_name(project):
    with pytest.raises(ValueError, match=r"^expose: 'everything' is not one of proxy, tools$"):
        HostlinkMcpTools(expose="everything")
    tools = HostlinkMcpTools(cwd=project)
    async with tools:
        with pytest.raises(RuntimeError, match=r"^HostlinkMcpTools is already entered$"):
            await tools.__aenter__()
