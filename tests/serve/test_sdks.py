"""Acceptance for `hostlink serve`: the official `anthropic` and `openai` SDKs as clients,
`hostlink serve` as a real process on 127.0.0.1, the real `claude` CLI against the fake
Anthropic API upstream. The client keeps its tools: it executes them and the results reach
the fake API in the next request; nothing is left behind after the server stops.
"""

from __future__ import annotations

import base64
import json
import signal

import anthropic
import pytest

from peers import requires_claude
from serve_support import (
    KEY,
    PNG,
    TOOL_PREFIX,
    WEATHER_SCHEMA,
    ServeProcess,
    api_images,
    fa,
    raw_post,
    read_until,
    tool_results,
)

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("fresh_script"), requires_claude]

WEATHER_TOOL = {"name": "get_weather", "description": "The weather in a city", "input_schema": WEATHER_SCHEMA}
OPENAI_TOOL = {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city",
                                                "parameters": WEATHER_SCHEMA}}


def weather(city: str) -> str:
    """The client's own tool: only the client runs it."""
    return f"sunny-{city.lower()}-4711"


@pytest.fixture
def claude(server):
    with anthropic.Anthropic(base_url=server.base_url, api_key=KEY, max_retries=0) as client:
        yield client


def test_banner_prints_base_urls_and_export_lines(server):
    assert server.banner[1:] == [
        f"export ANTHROPIC_BASE_URL={server.base_url}",
        'export ANTHROPIC_API_KEY="$SERVE_TEST_KEY"',
        f"export OPENAI_BASE_URL={server.base_url}/v1",
        'export OPENAI_API_KEY="$SERVE_TEST_KEY"',
    ]
    assert server.base_url.startswith("http://127.0.0.1:")
    (key_dir,) = [p for p in server.runtime.iterdir() if p.name.startswith("serve")]
    assert (key_dir / "key").read_text() == KEY and (key_dir / "key").stat().st_mode & 0o777 == 0o600


def test_models_in_each_sdks_shape(claude, gpt):
    assert [m.id for m in claude.models.list().data] == ["opus", "sonnet", "haiku", "fable"]
    assert [m.id for m in gpt.models.list().data] == ["opus", "sonnet", "haiku", "fable"]
    assert gpt.models.retrieve("claude-code/haiku").id == "haiku"


def test_messages_non_streaming_answer_with_thinking(claude, api):
    api.push(fa.Reply((fa.Thinking("Let me think about it."), fa.Text("Hello from Claude."))))
    message = claude.messages.create(model="sonnet", max_tokens=256, system="Be brief.",
                                     extra_body={"temperature": 1, "metadata": {"user_id": "u1"}},
                                     messages=[{"role": "user", "content": "Say hello."}])
    assert [block.type for block in message.content] == ["thinking", "text"]
    assert message.content[0].thinking == "Let me think about it."
    assert message.content[1].text == "Hello from Claude."
    assert message.stop_reason == "end_turn" and message.model == "sonnet"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (11, 7)


def test_messages_streaming_accumulates_in_the_sdk(claude, api):
    api.push(fa.Reply((fa.Thinking("Hmm."), fa.Text("A streamed answer, in pieces.")), chunk=5))
    with claude.messages.stream(model="claude-code/sonnet", max_tokens=64,
                                messages=[{"role": "user", "content": "Stream, please."}]) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_message()
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert [block.type for block in final.content] == ["thinking", "text"]
    assert final.content[1].text == "A streamed answer, in pieces."
    assert final.stop_reason == "end_turn" and final.usage.output_tokens == 7


def test_messages_two_round_tool_loop_the_client_runs_the_tool(claude, api):
    api.push(
        fa.Reply((fa.Text("Checking Paris."), fa.ToolUse(TOOL_PREFIX + "get_weather", {"city": "Paris"})),
                 stop_reason="tool_use"),
        fa.Reply((fa.ToolUse(TOOL_PREFIX + "get_weather", {"city": "Oslo"}),), stop_reason="tool_use"),
        fa.text("Paris and Oslo are sunny."),
    )
    messages = [{"role": "user", "content": "Weather in Paris, then Oslo?"}]
    rounds = 0
    while True:
        with claude.messages.stream(model="sonnet", max_tokens=512, tools=[WEATHER_TOOL],
                                    messages=messages) as stream:
            reply = stream.get_final_message()
        if reply.stop_reason != "tool_use":
            break
        rounds += 1
        content = [block.model_dump(exclude_none=True) for block in reply.content]
        messages.append({"role": "assistant", "content": content})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": block.id, "content": weather(**block.input)}
            for block in reply.content if block.type == "tool_use"]})
    assert rounds == 2 and reply.content[-1].text == "Paris and Oslo are sunny."
    first, second, third = api.messages_requests()[-3:]
    assert tool_results(first) == []
    assert "sunny-paris-4711" in json.dumps(tool_results(second))
    assert "sunny-oslo-4711" in json.dumps(tool_results(third))


def test_messages_image_in(claude, api):
    api.push(fa.text("A one-pixel image."))
    message = claude.messages.create(model="haiku", max_tokens=64, messages=[{"role": "user", "content": [
        {"type": "text", "text": "What is this?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}]}])
    assert message.content[0].text == "A one-pixel image."
    (image,) = api_images(api.messages_requests()[-1])
    assert base64.b64decode(image["source"]["data"]) == base64.b64decode(PNG)


def test_chat_completions_non_streaming_and_streaming(gpt, api):
    api.push(fa.text("Plain answer."), fa.text("Streamed answer.", chunk=4))
    completion = gpt.chat.completions.create(model="sonnet", temperature=1, stop=[], user="u1", messages=[
        {"role": "developer", "content": "Be brief."}, {"role": "user", "content": "Hi"}])
    assert completion.choices[0].message.content == "Plain answer."
    assert completion.choices[0].finish_reason == "stop"
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (11, 7)
    chunks = list(gpt.chat.completions.create(model="sonnet", stream=True, stream_options={"include_usage": True},
                                              messages=[{"role": "user", "content": "Stream"}]))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Streamed answer."
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens == 18


def test_chat_completions_two_round_tool_loop_with_streamed_tool_calls(gpt, api):
    api.push(
        fa.Reply((fa.ToolUse(TOOL_PREFIX + "get_weather", {"city": "Rome"}),), stop_reason="tool_use"),
        fa.Reply((fa.ToolUse(TOOL_PREFIX + "get_weather", {"city": "Lima"}),), stop_reason="tool_use"),
        fa.text("Rome and Lima are sunny."),
    )
    messages = [{"role": "user", "content": "Weather in Rome, then Lima?"}]
    rounds = 0
    while True:
        with gpt.chat.completions.stream(model="sonnet", tools=[OPENAI_TOOL], messages=messages) as stream:
            for _ in stream:
                pass
            completion = stream.get_final_completion()
        choice = completion.choices[0]
        if choice.finish_reason != "tool_calls":
            break
        rounds += 1
        messages.append(choice.message.model_dump(exclude_none=True, include={"role", "content", "tool_calls"}))
        for call in choice.message.tool_calls:
            assert call.function.name == "get_weather"
            messages.append({"role": "tool", "tool_call_id": call.id,
                             "content": weather(**json.loads(call.function.arguments))})
    assert rounds == 2 and choice.message.content == "Rome and Lima are sunny."
    _, second, third = api.messages_requests()[-3:]
    assert "sunny-rome-4711" in json.dumps(tool_results(second))
    assert "sunny-lima-4711" in json.dumps(tool_results(third))


def test_chat_completions_image_data_url_in(gpt, api):
    api.push(fa.text("An image."))
    gpt.chat.completions.create(model="sonnet", messages=[{"role": "user", "content": [
        {"type": "text", "text": "Look"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}]}])
    assert len(api_images(api.messages_requests()[-1])) == 1


def test_a_client_that_disconnects_mid_stream_stops_its_claude(server, api):
    api.push(fa.Reply((fa.Text("Started answering, then a long pause."),), delay_before_delta=60))
    body = json.dumps({"model": "sonnet", "max_tokens": 64, "stream": True,
                       "messages": [{"role": "user", "content": "Go"}]}).encode()
    with raw_post(server, "/v1/messages", body) as connection:
        received = read_until(connection, b"text_delta")
        assert received.startswith(b"HTTP/1.1 200") and server.claude_pids()
    server.wait_no_claude(timeout=10)


def test_sigterm_during_a_request_stops_claude_and_leaves_nothing(tmp_path, api):
    served = ServeProcess(tmp_path, api)
    api.push(fa.Reply((fa.Text("Working on it."),), delay_before_delta=60))
    sdk = anthropic.Anthropic(base_url=served.base_url, api_key=KEY, max_retries=0)
    import threading

    outcome: list[object] = []

    def call() -> None:
        try:
            outcome.append(sdk.messages.create(model="sonnet", max_tokens=8,
                                               messages=[{"role": "user", "content": "x"}]))
        except anthropic.APIError as error:
            outcome.append(error)

    worker = threading.Thread(target=call)
    worker.start()
    served.wait_for_claude()
    returncode, stderr = served.stop(signal.SIGTERM)
    worker.join(30)
    sdk.close()
    assert returncode == 0 and "stopped by SIGTERM" in stderr and "Traceback" not in stderr
    assert isinstance(outcome[0], anthropic.APIStatusError) and outcome[0].status_code == 529
    assert served.leftovers() == ([], [])


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_a_pydantic_ai_agent_runs_its_own_tool_in_a_loop_through_the_endpoint(server, api, wire):
    """A real agent framework on each wire format: pydantic-ai executes its Python tool, the
    result reaches the upstream API in the next request, for two rounds."""
    import anyio
    import httpx2
    from pydantic_ai import Agent
    from pydantic_ai.models import Model

    ran = []

    async def run() -> str:
        async with httpx2.AsyncClient() as http:  # closed here, not left to the collector
            model: Model
            if wire == "openai":
                from pydantic_ai.models.openai import OpenAIChatModel
                from pydantic_ai.providers.openai import OpenAIProvider

                model = OpenAIChatModel("sonnet", provider=OpenAIProvider(
                    base_url=server.base_url + "/v1", api_key=KEY, http_client=http))
            else:
                from pydantic_ai.models.anthropic import AnthropicModel
                from pydantic_ai.providers.anthropic import AnthropicProvider

                model = AnthropicModel("sonnet", provider=AnthropicProvider(
                    base_url=server.base_url, api_key=KEY, http_client=http))
            agent = Agent(model)

            @agent.tool_plain
            def get_weather(city: str) -> str:
                """The weather in a city."""
                ran.append(city)
                return weather(city)

            return (await agent.run("Weather in Rome, then Lima?")).output

    api.push(fa.tool_use(TOOL_PREFIX + "get_weather", {"city": "Rome"}),
             fa.tool_use(TOOL_PREFIX + "get_weather", {"city": "Lima"}), fa.text("Rome and Lima are sunny."))
    output = anyio.run(run)
    assert ran == ["Rome", "Lima"] and output == "Rome and Lima are sunny."
    _, second, third = api.messages_requests()[-3:]
    assert "sunny-rome-4711" in json.dumps(tool_results(second))
    assert "sunny-lima-4711" in json.dumps(tool_results(third))
