"""`hostlink serve` for the clients of issue 23, in one run against one local fake API.

- The Responses API against Chat Completions: the same one-text-answer request as
  `POST /v1/responses` and `POST /v1/chat/completions` (non-streaming) to one running
  server, interleaved; p50 of each. Both run the same provider request, so the difference is
  what the Responses wire costs (its parse, its store, its answer).
- The same pair in-process, without the provider: each wire's parse and answers (streamed
  and whole) of one request, which is all the endpoint adds beside the shared provider
  request — stable where the end-to-end row is noisy on a loaded machine.
- A 10-round client tool loop: a client that runs its own tool ten times, then gets the
  answer — through the endpoint (Chat Completions, each round a new request with the whole
  conversation) against the same loop on the in-process provider of a host session. Both
  sides prewarm the next `claude` while the client runs its tool, so the row shows what the
  HTTP hop and the wire formats add to a real agent loop.
"""

from __future__ import annotations

import http.client
import json
import tempfile
import time
from pathlib import Path

import anyio

from bench.bench_provider import CLAUDE, MODEL, _fake_anthropic
from bench.bench_serve import KEY, _Quiet, _Server
from bench.common import Row, interleaved, median, private_runtime

TOOL = {"name": "get_weather", "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
PREFIX = "mcp__hostlink__"


def _post(server: _Server, path: str, body: dict) -> dict:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    try:
        connection.request("POST", path, json.dumps(body), {"authorization": f"Bearer {KEY}",
                                                           "content-type": "application/json"})
        response = connection.getresponse()
        answer = response.read()
    finally:
        connection.close()
    if response.status != 200:
        raise RuntimeError(f"hostlink serve answered {response.status}: {answer[:200]!r}")
    return json.loads(answer)


def _script(fake_anthropic, fake, rounds: int) -> None:
    for index in range(rounds):
        fake.push(fake_anthropic.tool_use(PREFIX + "get_weather", {"city": f"city-{index}"}))
    fake.push(fake_anthropic.text("All sunny."))


def _endpoint_loop(server: _Server, fake_anthropic, fake, rounds: int, tool_seconds: float = 0.0):
    """A Chat Completions client's tool loop; its tool takes `tool_seconds` a round."""
    def loop() -> None:
        _script(fake_anthropic, fake, rounds)
        messages: list[dict] = [{"role": "user", "content": "Weather in ten cities?"}]
        while True:
            reply = _post(server, "/v1/chat/completions", {"model": MODEL, "messages": messages,
                                                           "tools": [{"type": "function", "function": TOOL}]})
            message = reply["choices"][0]["message"]
            if not message.get("tool_calls"):
                return
            messages.append({"role": "assistant", "content": None, "tool_calls": message["tool_calls"]})
            time.sleep(tool_seconds)
            for call in message["tool_calls"]:
                city = json.loads(call["function"]["arguments"])["city"]
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": f"sunny in {city}"})

    return loop


def _in_process_loop(options: object, home: str, fake_anthropic, fake, rounds: int):
    """The same loop on one host session's provider (its prewarmer included)."""
    from hostlink.claude_code.extension import ClaudeCodeExtension
    from hostlink.claude_code.models import MODELS
    from hostlink.host import (
        AssistantMessage,
        CancelSignal,
        Context,
        Done,
        TextContent,
        ToolCall,
        ToolDefinition,
        ToolResultMessage,
        UserMessage,
    )
    from hostlink.host.session import HostSession

    spec = next(spec for spec in MODELS if spec.id == MODEL)
    tools = (ToolDefinition(TOOL["name"], TOOL["description"], TOOL["parameters"]),)
    environ = {"HOME": home, "PATH": f"{CLAUDE.parent}:/usr/bin:/bin"}

    async def loop() -> None:
        _script(fake_anthropic, fake, rounds)
        host = HostSession([ClaudeCodeExtension(options=options, environ=environ)])  # type: ignore[arg-type]
        await host.start(cwd=Path(home), project_trusted=False, notifier=_Quiet())
        try:
            messages: list = [UserMessage((TextContent("Weather in ten cities?"),))]
            while True:
                events = [e async for e in host.stream("claude-code", spec, Context("", tuple(messages), tools),
                                                       CancelSignal())]
                done = events[-1]
                if not isinstance(done, Done):
                    raise RuntimeError(f"provider request failed: {done}")
                calls = [part for part in done.message.content if isinstance(part, ToolCall)]
                if not calls:
                    return
                messages.append(AssistantMessage(tuple(done.message.content)))
                messages.extend(ToolResultMessage(call.id, call.name,
                                                  (TextContent(f"sunny in {call.arguments['city']}"),))
                                for call in calls)
        finally:
            await host.shutdown()

    return lambda: anyio.run(loop)


def _wire_cost(quick: bool) -> tuple[float, float]:
    """Microseconds per request of each wire's own work, in-process: parse, then a streamed
    and a whole answer for the same one-text answer (what the endpoint adds per request)."""
    import timeit

    from hostlink.claude_code.models import MODELS
    from hostlink.host import AssistantMessage, Done, ProviderSpec, TextContent, TextDelta
    from hostlink.serve import openai
    from hostlink.serve.response_store import ResponseStore
    from hostlink.serve.responses_stream import ResponsesWire

    provider = ProviderSpec("claude-code", MODELS, None)  # type: ignore[arg-type]
    done = Done(AssistantMessage((TextContent("hi there"),)))
    wire = ResponsesWire(ResponseStore())

    def chat() -> None:
        parsed = openai.parse({"model": MODEL, "messages": [{"role": "user", "content": "hello"}]}, provider)
        streamer = openai.Streamer(parsed)
        streamer.opening() + streamer.feed(TextDelta("hi there")) + streamer.feed(done)
        openai.message(parsed, done.message)

    def responses() -> None:
        parsed = wire.parse({"model": MODEL, "input": "hello"}, provider)
        streamer = wire.Streamer(parsed)
        streamer.opening() + streamer.feed(TextDelta("hi there")) + streamer.feed(done)
        wire.message(parsed, done.message)

    number = 50 if quick else 2000
    times = [min(timeit.repeat(work, number=number, repeat=1 if quick else 5)) / number * 1e6
             for work in (chat, responses)]
    return times[0], times[1]


def run(quick: bool) -> list[Row]:
    chat_us, responses_us = _wire_cost(quick)
    wire_row = Row("serve Responses wire vs Chat Completions wire, in-process (parse + answers)", chat_us,
                   responses_us, "us", "<= +5 ms")
    if not CLAUDE.exists():
        return [wire_row]
    from hostlink.claude_code.process import ClaudeTransportOptions

    fake_anthropic = _fake_anthropic()
    rounds = 2 if quick else 10
    with private_runtime() as runtime, tempfile.TemporaryDirectory() as home, \
            fake_anthropic.FakeAnthropic(fake_anthropic.text("hi there")) as fake:
        options = ClaudeTransportOptions(test_api_base_url=fake.base_url, test_api_key="sk-ant-bench")
        server = _Server(fake.base_url, home, runtime)
        try:
            chat = lambda: _post(server, "/v1/chat/completions",  # noqa: E731
                                 {"model": MODEL, "messages": [{"role": "user", "content": "hello"}]})
            responses = lambda: _post(server, "/v1/responses", {"model": MODEL, "input": "hello"})  # noqa: E731
            if not quick:  # the CLI's first run in a fresh HOME writes its config
                interleaved(chat, responses, 1)
            base, ours = interleaved(chat, responses, 1 if quick else 9)
            in_process = _in_process_loop(options, home, fake_anthropic, fake, rounds)
            endpoint = _endpoint_loop(server, fake_anthropic, fake, rounds)
            time.sleep(0 if quick else 1)
            loop_base, loop_ours = interleaved(in_process, endpoint, 1 if quick else 3)
        finally:
            server.close()
    return [
        wire_row,
        Row("serve Responses request p50 vs the same Chat Completions request", median(base) * 1000,
            median(ours) * 1000, "ms", "<= +5 ms"),
        Row(f"serve {rounds}-round client tool loop vs the same loop in-process (prewarmed)", median(loop_base),
            median(loop_ours), "s", "<= 1.05x"),
    ]
