"""Property: any mutation of a valid request gets 200 or a 4xx in the API's own shape, never a 500.

Each API shape is one `Shape` entry in `SHAPES` (a valid request, its path, how its
errors look): a new API (the Responses API) is one more entry. Two runs of the same property:

- in-process, many examples: the real ASGI app (admission, body reading, parsing, the
  conversation rules) over a provider whose stream runs the Claude Code provider's real request
  preparation (tool catalog and transcript) and then answers, without starting `claude`;
- against the real server with the real `claude` CLI and the fake API, a few examples.

Mutations replace any value with any JSON value, delete or add keys and repeat list items.
Before the `media_type` fix, a list there was a `TypeError` and a plain-text 500.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adversarial.serve_attack import request
from host_support import answering_host
from hostlink.claude_code.catalog import CatalogError, build_catalog
from hostlink.claude_code.transcript import TranscriptError, serialize
from hostlink.host import AssistantMessage, Done, ErrorEvent, TextContent, Usage
from hostlink.serve import create_app
from peers import requires_claude
from serve_support import (
    PNG,
    WEATHER_SCHEMA,
)

KEY = "fuzz-key-0123456789abcdef"


@dataclass(frozen=True)
class Shape:
    path: str
    valid: dict[str, Any]
    is_error: Callable[[dict[str, Any]], bool]
    conversation: str = "messages"  # the key of the messages (Responses: "input")


def anthropic_error(body: dict) -> bool:
    return set(body) == {"type", "error"} and body["type"] == "error" and isinstance(body["error"]["message"], str)


def openai_error(body: dict) -> bool:
    return set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}


SHAPES = {
    "messages": Shape("/v1/messages", {
        "model": "sonnet", "max_tokens": 64, "stream": False, "metadata": {"user_id": "u"},
        "system": [{"type": "text", "text": "Be brief."}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Weather?"},
                                         {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                                      "data": PNG}}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Checking."},
                                              {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                               "input": {"city": "Paris"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "is_error": False,
                                          "content": [{"type": "text", "text": "sunny"}]}]},
        ],
        "tools": [{"name": "get_weather", "description": "The weather", "input_schema": WEATHER_SCHEMA}],
        "tool_choice": {"type": "auto"},
    }, anthropic_error),
    "chat": Shape("/v1/chat/completions", {
        "model": "sonnet", "stream": False, "n": 1, "stream_options": {"include_usage": True}, "temperature": 1,
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "Weather?"},
                                         {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}]},
            {"role": "assistant", "content": "Checking.", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "get_weather",
                                                                  "arguments": "{\"city\": \"Paris\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        ],
        "tools": [{"type": "function", "function": {"name": "get_weather", "description": "The weather",
                                                    "parameters": WEATHER_SCHEMA}}],
        "tool_choice": "auto",
    }, openai_error),
    "responses": Shape("/v1/responses", {
        "model": "sonnet", "stream": False, "store": False, "instructions": "Be brief.", "temperature": 1,
        "input": [
            {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "Weather?"},
                {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}"}]},
            {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{\"city\": \"Paris\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
        ],
        "tools": [{"type": "function", "name": "get_weather", "description": "The weather",
                   "parameters": WEATHER_SCHEMA},
                  {"type": "web_search"}],
        "tool_choice": "auto", "include": ["reasoning.encrypted_content"], "parallel_tool_calls": True,
    }, openai_error, conversation="input"),
}

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


def paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every place in `value` (the root too)."""
    found = [prefix]
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found += paths(item, (*prefix, key))
    return found


@st.composite
def mutated(draw, valid: dict) -> dict:
    payload = json.loads(json.dumps(valid))
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(paths(payload)[1:]))
        parent = payload
        for key in where[:-1]:
            parent = parent[key]
        last = where[-1]
        action = draw(st.sampled_from(["replace", "replace", "delete", "add", "repeat"]))
        if action == "replace":
            parent[last] = draw(JSON)
        elif action == "delete":
            del parent[last]
        elif action == "add" and isinstance(parent[last], dict):
            parent[last][draw(st.sampled_from(["type", "content", "text", "id", "name", "x"]))] = draw(JSON)
        elif action == "repeat" and isinstance(parent, list):
            parent.insert(last, json.loads(json.dumps(parent[last])))
    return payload


# --- in-process --------------------------------------------------------------------------


BUG = "secret-9931: make the provider fail"


async def prepared_answer(model, context, signal):
    """The Claude Code provider's real request preparation, then an answer without `claude`
    (or, for the text `BUG`, an exception: a bug the last resort must answer)."""
    if context.messages[-1].content == (TextContent(BUG),):
        raise RuntimeError(BUG)
    try:
        serialize(context, build_catalog(context.tools, context.messages))
    except (CatalogError, TranscriptError) as error:
        yield ErrorEvent(str(error), code="invalid_request")
        return
    yield Done(AssistantMessage((TextContent("ok"),), stop_reason="stop", usage=Usage()))


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with answering_host(prepared_answer, tmp_path_factory) as host:
        yield create_app(host, token=KEY, allowed_hosts=frozenset({"127.0.0.1:1"}))


async def _call(app, path: str, body: bytes) -> tuple[int, bytes]:
    sent: list[dict] = []
    chunks = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict:
        if chunks:
            return chunks.pop()
        await asyncio.sleep(3600)  # the client stays until the answer is complete
        return {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": path, "raw_path": path.encode(), "query_string": b"",
             "headers": [(b"host", b"127.0.0.1:1"), (b"x-api-key", KEY.encode()),
                         (b"content-length", str(len(body)).encode())],
             "server": ("127.0.0.1", 1), "client": ("127.0.0.1", 2), "scheme": "http", "http_version": "1.1"}
    await app(scope, receive, send)
    start = next(message for message in sent if message["type"] == "http.response.start")
    assert (b"cache-control", b"no-store") in start["headers"]
    return start["status"], b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


def check(shape: Shape, status: int, body: bytes) -> None:
    assert status == 200 or 400 <= status < 500, f"{status}: {body[:300]!r}"
    if status >= 400:
        assert shape.is_error(json.loads(body)), body[:300]


@pytest.mark.parametrize("name", SHAPES)
@settings(max_examples=400, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_mutation_in_process_is_200_or_a_4xx_in_the_api_shape(app, name, data):
    shape = SHAPES[name]
    payload = data.draw(mutated(shape.valid))
    status, body = asyncio.run(_call(app, shape.path, json.dumps(payload).encode()))
    check(shape, status, body)


@pytest.mark.parametrize("name", SHAPES)
def test_the_valid_requests_are_answered_in_process(app, name):
    assert asyncio.run(_call(app, SHAPES[name].path, json.dumps(SHAPES[name].valid).encode()))[0] == 200


@pytest.mark.parametrize("name", SHAPES)
def test_a_bug_is_a_500_in_the_api_shape_with_an_id_in_the_one_log_line(app, name, caplog):
    payload = {**SHAPES[name].valid, SHAPES[name].conversation: [{"role": "user", "content": BUG}]}
    status, body = asyncio.run(_call(app, SHAPES[name].path, json.dumps(payload).encode()))
    assert status == 500 and SHAPES[name].is_error(json.loads(body)) and BUG.encode() not in body
    incident = json.loads(body)["error"]["message"].split()[2]
    (line,) = [record.getMessage() for record in caplog.records]
    assert line.startswith(f"internal error {incident}: RuntimeError at test_hostile_serve_fuzz.py:")
    assert BUG not in line and caplog.records[0].exc_info is None


# --- the real server ---------------------------------------------------------------------


@requires_claude
@pytest.mark.slow
@pytest.mark.parametrize("name", SHAPES)
def test_any_mutation_against_the_real_server_is_200_or_a_4xx(name, server, fresh_script):
    shape = SHAPES[name]
    for fuzzed in _examples(shape, 15):
        status, _, body = request(server, "POST", shape.path, fuzzed)
        check(shape, status, body)
    assert "Traceback" not in server.stderr()


def _examples(shape: Shape, count: int) -> list[dict]:
    found: list[dict] = []

    @settings(max_examples=count, derandomize=True, database=None)
    @given(mutated(shape.valid))
    def collect(payload: dict) -> None:
        found.append(payload)

    collect()
    return found
