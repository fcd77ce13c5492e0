"""`hostlink serve` continues a client's `traceparent`: the real server process, its OpenTelemetry
SDK exporting to a file (`serve_host.py --trace-file`), plain HTTP requests from this process
(the Anthropic SDK would send a traceparent of its own spans once a test here set a tracer
provider), the real `claude` CLI against the fake API. One trace: the client's span, the server span, the
provider's `chat` span with the GenAI attributes and its phases, and no prompt, argument or path."""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path

import pytest

from peers import requires_claude
from serve_support import KEY, TOOL_PREFIX, WEATHER_SCHEMA, fa, start_server
from tracing_support import PHASES

pytestmark = [pytest.mark.slow, requires_claude, pytest.mark.usefixtures("fresh_script")]
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"
PROMPT = "the weather in Zanzibar-4711, please"


@pytest.fixture(scope="module")
def trace_file(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("trace") / "spans.jsonl"


@pytest.fixture(scope="module")
def server(api, tmp_path_factory, trace_file):
    yield from start_server(api, tmp_path_factory, "--trace-file", str(trace_file))


def spans_of(trace_file: Path, trace_id: str, until: str, count: int = 1, timeout: float = 10) -> list[dict]:
    """The spans of `trace_id` once `count` named `until` have ended (the server span ends last)."""
    deadline = time.monotonic() + timeout
    while True:
        lines = trace_file.read_text().splitlines() if trace_file.exists() else []
        spans = [span for span in map(json.loads, lines) if span["context"]["trace_id"] == "0x" + trace_id]
        if sum(span["name"] == until for span in spans) >= count or time.monotonic() > deadline:
            return spans
        time.sleep(0.05)


def messages(server, body: dict, traceparent: str) -> dict:
    """POST /v1/messages as a client that traces sends it."""
    request = urllib.request.Request(server.base_url + "/v1/messages", data=json.dumps(body).encode(), headers={
        "x-api-key": KEY, "content-type": "application/json", "anthropic-version": "2023-06-01",
        "traceparent": traceparent})
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.load(answer)


TOOLS = [{"name": "weather", "description": "weather", "input_schema": WEATHER_SCHEMA}]


def test_a_request_with_a_traceparent_is_one_trace_with_the_phases(server, api, trace_file):
    api.push(fa.tool_use(TOOL_PREFIX + "weather", {"city": "Zanzibar-4711"}))
    answer = messages(server, {"model": "sonnet", "max_tokens": 100, "tools": TOOLS,
                               "messages": [{"role": "user", "content": PROMPT}]}, f"00-{TRACE_ID}-{CLIENT_SPAN}-01")
    assert answer["stop_reason"] == "tool_use"
    spans = spans_of(trace_file, TRACE_ID, "POST /v1/messages")
    by_name = {span["name"]: span for span in spans}
    request = by_name["POST /v1/messages"]
    assert request["kind"] == "SpanKind.SERVER" and request["parent_id"] == "0x" + CLIENT_SPAN
    assert request["attributes"]["http.response.status_code"] == 200
    assert request["attributes"]["http.route"] == "/v1/messages"
    chat = by_name["chat sonnet"]
    assert chat["parent_id"] == request["context"]["span_id"] and chat["kind"] == "SpanKind.CLIENT"
    attributes = chat["attributes"]
    assert attributes["gen_ai.operation.name"] == "chat" and attributes["gen_ai.request.model"] == "sonnet"
    assert attributes["gen_ai.response.finish_reasons"] == ["tool_call"]
    assert attributes["gen_ai.usage.input_tokens"] == answer["usage"]["input_tokens"]
    assert attributes["gen_ai.usage.output_tokens"] == answer["usage"]["output_tokens"]
    assert attributes["hostlink.conversation.round"] == 1 and attributes["hostlink.prewarmed"] is False
    phases = sorted((span for span in spans if span["parent_id"] == chat["context"]["span_id"]),
                    key=lambda span: span["start_time"])
    assert [span["name"] for span in phases] == PHASES
    # the conversation's next round: the tool's result, answered by the child prewarmed meanwhile
    api.push(fa.text("Sunny."))
    [call] = [block for block in answer["content"] if block["type"] == "tool_use"]
    messages(server, {"model": "sonnet", "max_tokens": 100, "tools": TOOLS, "messages": [
        {"role": "user", "content": PROMPT}, {"role": "assistant", "content": [call]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"],
                                      "content": "sunny in Zanzibar-4711"}]}]}, f"00-{TRACE_ID}-{CLIENT_SPAN}-01")
    spans = spans_of(trace_file, TRACE_ID, "POST /v1/messages", count=2)
    second = [span for span in spans if span["name"] == "chat sonnet"][-1]["attributes"]
    assert second["hostlink.conversation.round"] == 2 and second["hostlink.prewarmed"] is True
    assert second["gen_ai.response.finish_reasons"] == ["stop"]
    text = json.dumps(spans)
    for secret in ("Zanzibar-4711", PROMPT, str(server.home), str(server.runtime)):
        assert secret not in text


def test_a_request_without_a_traceparent_starts_a_trace_of_its_own(server, api, trace_file):
    api.push(fa.text("hello"))
    messages(server, {"model": "sonnet", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]},
             "00-not-a-trace-01")  # malformed: ignored
    deadline = time.monotonic() + 10
    while True:
        spans = [json.loads(line) for line in trace_file.read_text().splitlines()]
        roots = [span for span in spans if span["name"] == "POST /v1/messages" and span["parent_id"] is None]
        if roots or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    [root] = roots
    chat = next(span for span in spans if span["parent_id"] == root["context"]["span_id"])
    assert chat["name"] == "chat sonnet" and chat["attributes"]["gen_ai.response.finish_reasons"] == ["stop"]
