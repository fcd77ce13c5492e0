"""The OpenAI Responses API and structured output, with the real clients people use: the
`openai` SDK (`responses.create/stream/parse`, `chat.completions.parse`), an OpenAI
Agents SDK agent on its default (Responses) model, LangChain's `with_structured_output`.
Each asserts what reached the fake Anthropic API behind the real `claude` CLI.
"""

from __future__ import annotations

import asyncio
import json

import openai
import pytest
from pydantic import BaseModel

from peers import requires_claude
from serve_support import (
    KEY,
    TOOL_PREFIX,
    WEATHER_SCHEMA,
    fa,
    records,
    tool_results,
)

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("fresh_script"), requires_claude]

OUTPUT_TOOL = TOOL_PREFIX + "respond_with_json"
FUNCTION = {"type": "function", "name": "get_weather", "description": "The weather in a city",
            "parameters": WEATHER_SCHEMA}


class City(BaseModel):
    name: str
    population: int


def offered(request: dict) -> dict[str, dict]:
    """The tools one upstream request offered Claude, by name, with their schemas."""
    return {tool["name"]: tool["input_schema"] for tool in request["tools"] if tool["name"].startswith(TOOL_PREFIX)}


def test_responses_create_tool_round_trip_through_previous_response_id(gpt, api):
    api.push(fa.tool_use(TOOL_PREFIX + "get_weather", {"city": "Paris"}), fa.text("Paris is sunny."))
    first = gpt.responses.create(model="claude-sonnet-5-5", input="Weather in Paris?", tools=[
        FUNCTION, {"type": "web_search"}], instructions="Be brief.", include=["reasoning.encrypted_content"])
    (call,) = [item for item in first.output if item.type == "function_call"]
    assert (call.name, json.loads(call.arguments)) == ("get_weather", {"city": "Paris"})
    assert first.status == "completed" and first.usage.total_tokens == 18
    second = gpt.responses.create(model="sonnet", previous_response_id=first.id, tools=[FUNCTION], input=[
        {"type": "function_call_output", "call_id": call.call_id, "output": "sunny-paris-4711"}])
    assert second.output_text == "Paris is sunny."
    upstream = api.messages_requests()[-1]
    assert "sunny-paris-4711" in json.dumps(tool_results(upstream))
    assert "Weather in Paris?" in json.dumps(records(upstream))  # the stored turn came back
    assert list(offered(upstream)) == [TOOL_PREFIX + "get_weather"]  # web_search was not offered


def test_responses_stream_accumulates_in_the_sdk(gpt, api):
    api.push(fa.Reply((fa.Thinking("Let me see."), fa.Text("A streamed answer, in pieces.")), chunk=5))
    with gpt.responses.stream(model="sonnet", input=[
            {"role": "developer", "content": "Be brief."}, {"role": "user", "content": "Stream, please."}]) as stream:
        events = list(stream)
        final = stream.get_final_response()
    assert [event.sequence_number for event in events] == list(range(len(events)))
    kinds = [event.type for event in events]
    assert kinds[:3] == ["response.created", "response.in_progress", "response.output_item.added"]
    assert kinds[-1] == "response.completed" and "response.output_text.delta" in kinds
    assert [item.type for item in final.output] == ["reasoning", "message"]
    assert final.output[0].summary[0].text == "Let me see."
    assert final.output_text == "A streamed answer, in pieces."


def test_responses_stream_of_a_function_call_and_item_reference(gpt, api):
    api.push(fa.tool_use(TOOL_PREFIX + "get_weather", {"city": "Oslo"}), fa.text("Oslo is sunny."))
    with gpt.responses.stream(model="sonnet", input="Weather in Oslo?", tools=[FUNCTION]) as stream:
        final = stream.get_final_response()
    (call,) = final.output
    assert call.type == "function_call" and json.loads(call.arguments) == {"city": "Oslo"}
    answer = gpt.responses.create(model="sonnet", tools=[FUNCTION], input=[
        {"role": "user", "content": "Weather in Oslo?"}, {"type": "item_reference", "id": call.id},
        {"type": "function_call_output", "call_id": call.call_id, "output": "sunny-oslo-4711"}])
    assert answer.output_text == "Oslo is sunny."
    assert "sunny-oslo-4711" in json.dumps(tool_results(api.messages_requests()[-1]))


def test_responses_parse_gives_the_model_and_the_schema_reached_claude(gpt, api):
    api.push(fa.tool_use(OUTPUT_TOOL, {"name": "Lima", "population": 10_000_000}))
    parsed = gpt.responses.parse(model="sonnet", input="The largest city of Peru?", text_format=City)
    assert parsed.output_parsed == City(name="Lima", population=10_000_000)
    assert json.loads(parsed.output_text) == {"name": "Lima", "population": 10_000_000}
    schema = offered(api.messages_requests()[-1])[OUTPUT_TOOL]
    assert schema["required"] == ["name", "population"] and schema["properties"]["population"]["type"] == "integer"


def test_chat_completions_parse_and_a_violating_answer(gpt, api):
    api.push(fa.tool_use(OUTPUT_TOOL, {"name": "Rome", "population": 2_800_000}),
             fa.tool_use(OUTPUT_TOOL, {"name": "Rome", "population": "many"}))
    completion = gpt.chat.completions.parse(model="sonnet", messages=[{"role": "user", "content": "Capital?"}],
                                            response_format=City)
    assert completion.choices[0].message.parsed == City(name="Rome", population=2_800_000)
    assert completion.choices[0].finish_reason == "stop"
    with pytest.raises(openai.InternalServerError) as caught:
        gpt.chat.completions.parse(model="sonnet", messages=[{"role": "user", "content": "Capital?"}],
                                   response_format=City)
    message = caught.value.body["message"]
    assert "does not match" in message and "population" in message and "many" not in message


def test_json_object_mode_answers_json_text_without_fences(gpt, api):
    api.push(fa.text('```json\n{"ok": true}\n```'))
    completion = gpt.chat.completions.create(model="sonnet", response_format={"type": "json_object"},
                                             messages=[{"role": "user", "content": "JSON please"}])
    assert json.loads(completion.choices[0].message.content) == {"ok": True}


def test_an_agents_sdk_agent_on_its_default_model_with_a_tool_and_an_output_type(server, api):
    from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled

    set_tracing_disabled(True)
    ran = []

    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        ran.append(city)
        return f"sunny-{city.lower()}-4711"

    api.push(fa.tool_use(TOOL_PREFIX + "get_weather", {"city": "Kyiv"}), fa.text("Kyiv is sunny."),
             fa.tool_use(OUTPUT_TOOL, {"name": "Kyiv", "population": 2_900_000}))

    async def both():
        # The client is closed on this loop, before asyncio.run closes it: its connections too.
        async with openai.AsyncOpenAI(base_url=server.base_url + "/v1", api_key=KEY, max_retries=0) as client:
            model = OpenAIResponsesModel(model="sonnet", openai_client=client)
            return (await Runner.run(Agent(name="w", model=model, tools=[get_weather]), "Weather in Kyiv?"),
                    await Runner.run(Agent(name="c", model=model, output_type=City), "Capital of Ukraine?"))

    result, typed = asyncio.run(both())
    assert ran == ["Kyiv"] and result.final_output == "Kyiv is sunny."
    assert "sunny-kyiv-4711" in json.dumps(tool_results(api.messages_requests()[-2]))
    assert typed.final_output == City(name="Kyiv", population=2_900_000)
    assert OUTPUT_TOOL in offered(api.messages_requests()[-1])


def test_langchain_with_structured_output_on_its_default_method(server, api):
    from langchain_openai import ChatOpenAI

    api.push(fa.tool_use(OUTPUT_TOOL, {"name": "Quito", "population": 2_800_000}))
    chat = ChatOpenAI(model="sonnet", base_url=server.base_url + "/v1", api_key=KEY, max_retries=0)
    assert chat.with_structured_output(City).invoke("Capital of Ecuador?") == City(name="Quito", population=2_800_000)
    assert set(offered(api.messages_requests()[-1])[OUTPUT_TOOL]["properties"]) == {"name", "population"}
