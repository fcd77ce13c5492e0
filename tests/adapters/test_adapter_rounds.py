"""The rounds of one conversation on one host session in the LangChain and LiteLLM hosts: each
round after the first takes the `claude` its session prewarmed while the framework ran the
tools, synchronous calls as well as async ones; a conversation left after a round of tool
calls stops its prewarmed `claude` at `close`, at garbage collection and at the idle bound.
The real frameworks and the real `claude` CLI against the fake Anthropic API.
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import time

import pytest

from claude_transport_support import FAKES, live_processes_mentioning
from hostlink.claude_code import metrics, prewarm

sys.path.insert(0, str(FAKES))
import fake_anthropic as fa

from peers import requires_claude

pytestmark = [pytest.mark.slow, requires_claude,
              pytest.mark.filterwarnings("ignore:Item.* using the `ReadOnly` qualifier:UserWarning")]
CITIES = ("Paris", "Rome", "Oslo")
WEATHER = {"type": "function", "function": {"name": "weather", "description": "The weather in a city.",
                                            "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                           "required": ["city"]}}}


@pytest.fixture(autouse=True)
def nothing_left(runtime_dir):
    yield
    assert live_processes_mentioning(str(runtime_dir)) == []
    (runtime_dir / metrics.FILE_NAME).unlink(missing_ok=True)


def script(api) -> None:
    api.push(*(fa.tool_use("mcp__hostlink__weather", {"city": city}) for city in CITIES), fa.text("Sunny everywhere."))


def until(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def private_left(runtime_dir) -> list[str]:
    return [path.name for path in runtime_dir.iterdir() if path.name != metrics.FILE_NAME]


# --- LangChain ------------------------------------------------------------------------------


def langchain_loop(chat, invoke) -> str:
    """A tool loop as LangGraph's agents run it: the whole history each round."""
    from langchain_core.messages import HumanMessage, ToolMessage

    bound = chat.bind_tools([WEATHER])
    messages: list = [HumanMessage("weather in three cities?")]
    while True:
        reply = invoke(bound, messages)
        messages.append(reply)
        if not reply.tool_calls:
            return reply.content
        messages += [ToolMessage("sunny", tool_call_id=call["id"]) for call in reply.tool_calls]


def test_a_synchronous_langchain_loop_finds_a_prewarmed_claude_each_round(chat, api, cold_starts, runtime_dir):
    script(api)
    assert langchain_loop(chat, lambda bound, messages: bound.invoke(messages)) == "Sunny everywhere."
    assert len(api.messages_requests()) == 4
    assert len(cold_starts) == 1  # only the first round started cold
    assert metrics.last()["child"] == "prewarmed"
    assert live_processes_mentioning(str(runtime_dir)) == []  # the answer ended the conversation's session


def test_an_async_langchain_loop_finds_a_prewarmed_claude_each_round(chat, api, cold_starts):
    from langchain_core.messages import HumanMessage, ToolMessage

    async def run() -> str:
        bound = chat.bind_tools([WEATHER])
        messages: list = [HumanMessage("weather in three cities?")]
        while (reply := await bound.ainvoke(messages)).tool_calls:
            messages += [reply, *(ToolMessage("sunny", tool_call_id=call["id"]) for call in reply.tool_calls)]
        return reply.content

    script(api)
    assert asyncio.run(run()) == "Sunny everywhere."
    assert len(cold_starts) == 1


def test_two_conversations_at_once_share_no_session(chat, api, cold_starts):
    """Two conversations, each two rounds, interleaved: neither takes the other's session."""
    from langchain_core.messages import HumanMessage, ToolMessage

    bound = chat.bind_tools([WEATHER])
    api.push(*(fa.tool_use("mcp__hostlink__weather", {"city": city}) for city in ("Paris", "Rome")),
             fa.text("Paris: sunny."), fa.text("Rome: sunny."))
    first = [HumanMessage("Paris?")]
    second = [HumanMessage("Rome?")]
    for messages in (first, second):
        reply = bound.invoke(messages)
        messages += [reply, ToolMessage("sunny", tool_call_id=reply.tool_calls[0]["id"])]
    assert bound.invoke(first).content == "Paris: sunny."
    assert bound.invoke(second).content == "Rome: sunny."
    assert len(cold_starts) == 2  # one per conversation
    requests = api.messages_requests()
    assert "Paris?" in json.dumps(requests[2]["messages"]) and "Rome?" in json.dumps(requests[3]["messages"])


def test_close_stops_a_conversation_left_after_a_tool_round(chat, api, runtime_dir):
    api.push(fa.tool_use("mcp__hostlink__weather", {"city": "Paris"}))
    assert chat.bind_tools([WEATHER]).invoke("weather in Paris?").tool_calls
    assert until(lambda: live_processes_mentioning(str(runtime_dir)) != [], 30)  # the next round's claude
    chat.close()
    assert live_processes_mentioning(str(runtime_dir)) == [] and private_left(runtime_dir) == []
    api.push(fa.text("Still here."))
    assert chat.invoke("and now?").content == "Still here."  # a closed model takes requests again


def test_a_collected_model_stops_its_prewarmed_claude(make_chat, api, runtime_dir):
    model = make_chat()
    api.push(fa.tool_use("mcp__hostlink__weather", {"city": "Paris"}))
    assert model.bind_tools([WEATHER]).invoke("weather in Paris?").tool_calls
    assert until(lambda: live_processes_mentioning(str(runtime_dir)) != [], 30)
    del model
    gc.collect()
    assert until(lambda: live_processes_mentioning(str(runtime_dir)) == [], 10)  # well within the idle bound
    assert until(lambda: private_left(runtime_dir) == [], 5)


def test_an_unfollowed_round_stops_its_claude_within_the_idle_bound(chat, api, runtime_dir, monkeypatch):
    monkeypatch.setattr(prewarm, "IDLE_SECONDS", 2.0)
    api.push(fa.tool_use("mcp__hostlink__weather", {"city": "Paris"}))
    assert chat.bind_tools([WEATHER]).invoke("weather in Paris?").tool_calls
    assert until(lambda: live_processes_mentioning(str(runtime_dir)) != [], 30)
    started = time.monotonic()
    assert until(lambda: live_processes_mentioning(str(runtime_dir)) == [], 10)
    assert time.monotonic() - started < 2.0 + 5  # the bound, and the stop itself
    assert until(lambda: private_left(runtime_dir) == [], 5)  # the parked session is shut down too


# --- LiteLLM --------------------------------------------------------------------------------


def test_a_litellm_completion_loop_finds_a_prewarmed_claude_each_round(registered, litellm, api, cold_starts):
    script(api)
    messages: list = [{"role": "user", "content": "weather in three cities?"}]
    while True:
        answer = litellm.completion(model="claude-code/sonnet", messages=messages, tools=[WEATHER])
        message = answer.choices[0].message
        if not message.tool_calls:
            break
        messages += [message.model_dump(), *({"role": "tool", "tool_call_id": call.id, "content": "sunny"}
                                             for call in message.tool_calls)]
    assert message.content == "Sunny everywhere." and len(api.messages_requests()) == 4
    assert len(cold_starts) == 1
    assert metrics.last()["child"] == "prewarmed"


def test_a_streamed_litellm_loop_finds_a_prewarmed_claude_too(registered, litellm, api, cold_starts):
    script(api)
    messages: list = [{"role": "user", "content": "weather in three cities?"}]
    for _ in range(len(CITIES)):
        chunks = list(litellm.completion(model="claude-code/sonnet", messages=messages, tools=[WEATHER], stream=True))
        calls = [call for chunk in chunks for call in chunk.choices[0].delta.tool_calls or []]
        messages += [{"role": "assistant", "content": None, "tool_calls": [
            {"id": call.id, "type": "function", "function": {"name": call.function.name,
                                                             "arguments": call.function.arguments}} for call in calls]},
            *({"role": "tool", "tool_call_id": call.id, "content": "sunny"} for call in calls)]
    final = litellm.completion(model="claude-code/sonnet", messages=messages, tools=[WEATHER])
    assert final.choices[0].message.content == "Sunny everywhere."
    assert len(cold_starts) == 1
