"""Tool search through `hostlink serve` with the official `anthropic` SDK as the client: tools
sent with `defer_loading` are offered to Claude only once a `tool_reference` in a tool result
names them, the client runs its own search tool, earlier transcript records stay
byte-identical, and a proposal of a tool never loaded fails the request cleanly. What hostlink
cannot do (the API's server-side search) and what the API refuses are refused by name. The
real `claude` CLI runs upstream against the fake Anthropic API."""

from __future__ import annotations

import json

import anthropic
import pytest

from peers import requires_claude
from serve_support import KEY, TOOL_PREFIX, WEATHER_SCHEMA, fa, records, tool_results

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("fresh_script"), requires_claude]

QUERY_SCHEMA = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
SEARCH = {"name": "find_tools", "description": "Find tools by keyword", "input_schema": QUERY_SCHEMA}
DEFERRED = [
    {"name": "get_weather", "description": "The weather in a city", "input_schema": WEATHER_SCHEMA,
     "defer_loading": True},
    {"name": "get_time", "description": "The time in a city", "input_schema": WEATHER_SCHEMA, "defer_loading": True},
    {"name": "delete_everything", "description": "Never load this", "input_schema": {"type": "object"},
     "defer_loading": True},
]
TOOLS = [SEARCH, *DEFERRED]


@pytest.fixture
def claude(server):
    with anthropic.Anthropic(base_url=server.base_url, api_key=KEY, max_retries=0) as client:
        yield client


def offered(request: dict) -> list[str]:
    """The client tools the upstream request offered Claude (the proposal server's catalog)."""
    return sorted(tool["name"].removeprefix(TOOL_PREFIX) for tool in request.get("tools", [])
                  if tool["name"].startswith(TOOL_PREFIX))


def search(query: str) -> list[dict]:
    """The client's own search tool: its result names the tools found."""
    return [{"type": "tool_reference", "tool_name": tool["name"]} for tool in DEFERRED if query in tool["name"]]


def test_a_deferred_tool_is_offered_once_a_tool_reference_loads_it(claude, api):
    api.push(fa.tool_use(TOOL_PREFIX + "find_tools", {"query": "weather"}),
             fa.tool_use(TOOL_PREFIX + "get_weather", {"city": "Oslo"}),
             fa.text("Oslo is sunny."))
    messages: list[dict] = [{"role": "user", "content": "The weather in Oslo?"}]
    while True:
        reply = claude.messages.create(model="sonnet", max_tokens=256, tools=TOOLS, messages=messages)
        if reply.stop_reason != "tool_use":
            break
        (call,) = [block for block in reply.content if block.type == "tool_use"]
        result = search(call.input["query"]) if call.name == "find_tools" else f"sunny in {call.input['city']}"
        messages.append({"role": "assistant", "content": [block.model_dump(exclude_none=True)
                                                          for block in reply.content]})
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id,
                                                      "content": result}]})
    assert reply.content[0].text == "Oslo is sunny."
    searched, loaded, answered = api.messages_requests()[-3:]
    assert offered(searched) == ["find_tools"]  # nothing deferred is offered before a reference
    assert offered(loaded) == offered(answered) == ["find_tools", "get_weather"]  # from then on
    assert "Tool loaded: get_weather" in json.dumps(tool_results(loaded))
    assert "sunny in Oslo" in json.dumps(tool_results(answered))
    assert records(answered)[:len(records(loaded))] == records(loaded)  # earlier records unchanged


def test_a_proposal_of_a_tool_never_loaded_fails_the_request(claude, api):
    api.push(fa.tool_use(TOOL_PREFIX + "delete_everything", {}))
    with pytest.raises(anthropic.InternalServerError) as failed:
        claude.messages.create(model="sonnet", max_tokens=256, tools=TOOLS,
                               messages=[{"role": "user", "content": "Clean up."}])
    assert failed.value.body["error"]["message"] == "claude proposed a tool that is not in the request's catalog"
    assert offered(api.messages_requests()[-1]) == ["find_tools"]


def ask(content: list[dict]) -> list[dict]:
    """A conversation whose last user turn answers a search call with `content`."""
    call = {"type": "tool_use", "id": "toolu_1", "name": "find_tools", "input": {"query": "x"}}
    return [{"role": "user", "content": "Find a tool."}, {"role": "assistant", "content": [call]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": content}]}]


@pytest.mark.parametrize(("extra", "problem"), [
    ({"tools": DEFERRED}, "tools: every tool has defer_loading: true"),
    ({"tools": [{"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"}, *DEFERRED]},
     "tools.0.type: hostlink serve cannot run the API's server-side tool search (tool_search_tool_regex_20251119)"),
    ({"tools": [*TOOLS, {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}]},
     "tools.4.type: hostlink serve cannot run the API's server-side tool search (tool_search_tool_bm25_20251119)"),
    ({"tools": TOOLS, "messages": ask([{"type": "tool_reference", "tool_name": "launch_rockets"}])},
     "messages.2.content.0.content.0.tool_name: names no tool of the request's tools"),
    ({"tools": TOOLS, "messages": ask([{"type": "tool_reference"}])},
     "messages.2.content.0.content.0.tool_name: field required"),
    ({"tools": TOOLS, "messages": [{"role": "user", "content": [{"type": "tool_reference", "tool_name": "get_time"}]}]},
     "messages.0.content.0.type: expected one of 'text', 'image'"),
    ({"tools": [{**SEARCH, "defer_loading": "yes"}]}, "tools.0.defer_loading: expected a boolean"),
])
def test_what_tool_search_cannot_take_is_refused_by_name(claude, extra, problem):
    body = {"messages": [{"role": "user", "content": "hello"}], **extra}
    with pytest.raises(anthropic.BadRequestError) as refused:
        claude.messages.create(model="sonnet", max_tokens=64, **body)
    assert refused.value.body["error"]["message"].startswith(problem)
