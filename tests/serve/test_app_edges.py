"""The serve app's edges in this process (the real ASGI app over a provider that answers as each
test's prompt asks, no `claude`): who is refused, a stopping server, a stream cut by a stop, a
provider that ends without a result, the models listing and the ASGI events that are not HTTP."""

from __future__ import annotations

import json

import httpx
import pytest

from host_support import answering_host
from hostlink.claude_code.models import MODELS
from hostlink.host import (
    AssistantMessage,
    Done,
    ErrorEvent,
    TextContent,
    TextDelta,
    ThinkingContent,
    Usage,
)
from hostlink.serve import create_app
from hostlink.serve.app import ServeState

KEY = "edges-test-key-0123456789"
BASE = "http://127.0.0.1:8484"
HEADERS = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
pytestmark = pytest.mark.anyio


SEEN: list = []  # the contexts the provider was given, as the model would see them


async def answer(model, context, signal):
    """The last user text says how to answer: `stopped` streams a delta then the host's abort,
    `nothing` ends without a result, `broken` streams a delta then raises, anything else is a
    plain answer."""
    SEEN.append(context)
    prompt = context.messages[-1].content[0].text
    if prompt == "nothing":
        yield TextDelta("half")
        return
    if prompt == "broken":
        yield TextDelta("half")
        raise RuntimeError("a bug in the provider, mid-stream")
    if prompt == "stopped":
        yield TextDelta("half")
        yield ErrorEvent("the request was cancelled", code="aborted")
        return
    yield Done(AssistantMessage((TextContent("ok"),), stop_reason="stop", usage=Usage(input_tokens=1, output_tokens=1)))


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    with answering_host(answer, tmp_path_factory) as session:
        yield session


@pytest.fixture
def app(host):
    return create_app(host, token=KEY)


def client(app, base=BASE) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=base)


def message(text: str, *, stream: bool = False) -> dict:
    return {"model": "sonnet", "max_tokens": 16, "stream": stream, "messages": [{"role": "user", "content": text}]}


def test_a_bad_token_or_limit_is_refused_by_name(host):
    with pytest.raises(ValueError, match="the endpoint needs a non-empty token"):
        create_app(host, token="")
    with pytest.raises(ValueError, match="max_concurrent must be at least 1"):
        create_app(host, token=KEY, max_concurrent=0)


@pytest.mark.parametrize("base", ["http://10.0.0.1:8484", "http://localhost:8484"])
async def test_a_server_address_that_is_not_a_loopback_ip_accepts_no_host(app, base):
    async with client(app, base) as http:
        hello = await http.get("/api/hello")
        models = await http.get("/v1/models", headers=HEADERS)
    for refused in (hello, models):
        assert refused.status_code == 403
        assert refused.json()["error"]["message"] == "the Host header is not this server's loopback address"


def test_a_request_without_a_server_address_accepts_no_host(host):
    state = ServeState(host, KEY, 1, None)
    with pytest.raises(Exception, match="the Host header is not this server's loopback address"):
        state.check({"type": "http", "headers": [(b"host", b"127.0.0.1:8484")], "server": None}, key=False)


async def test_a_stopping_server_refuses_new_requests(host):
    stopping = create_app(host, token=KEY)
    stopping.state.serve.stop_all()
    async with client(stopping) as http:
        refused = await http.post("/v1/messages", headers=HEADERS, json=message("hi"))
    assert refused.status_code == 529
    assert refused.json()["error"] == {"type": "overloaded_error", "message": "the server is stopping"}


async def test_a_stream_stopped_by_the_host_ends_in_the_stopping_error(app):
    async with client(app) as http:
        answered = await http.post("/v1/messages", headers=HEADERS, json=message("stopped", stream=True))
    assert answered.status_code == 200
    events = [json.loads(line[6:]) for line in answered.text.splitlines() if line.startswith("data: ")]
    assert events[-1] == {"type": "error", "error": {"type": "overloaded_error", "message": "the server is stopping"}}


async def test_a_bug_after_a_stream_started_ends_it_with_one_log_line_and_nothing_more_sent(app, caplog):
    import anyio

    body = json.dumps(message("broken", stream=True)).encode()
    incoming = [{"type": "http.request", "body": body, "more_body": False}]
    sent = []

    async def receive():
        if incoming:
            return incoming.pop()
        await anyio.sleep_forever()  # the client stays

    async def send(event):
        sent.append(event)

    await app(http_scope("/v1/messages"), receive, send)
    assert [event["type"] for event in sent][:1] == ["http.response.start"] and sent[0]["status"] == 200
    said = b"".join(event.get("body", b"") for event in sent[1:]).decode()
    assert '"text": "half"' in said and "message_stop" not in said and "error" not in said  # no 500 after a 200
    (line,) = [record.getMessage() for record in caplog.records if "internal error" in record.getMessage()]
    assert "RuntimeError at test_app_edges.py:" in line and "a bug" not in line


async def test_a_provider_that_ends_without_a_result_is_a_500_in_the_apis_shape(app):
    async with client(app) as http:
        answered = await http.post("/v1/messages", headers=HEADERS, json=message("nothing"))
    assert answered.status_code == 500
    assert answered.json()["error"]["message"] == "the provider ended without a result"


async def test_one_model_by_id_and_an_unknown_one(app):
    async with client(app) as http:
        known = await http.get(f"/v1/models/{MODELS[0].id}", headers=HEADERS)
        unknown = await http.get("/v1/models/gpt-9", headers=HEADERS)
    assert known.status_code == 200 and known.json()["id"] == MODELS[0].id
    assert unknown.status_code == 404
    assert unknown.json()["error"]["message"] == "model 'gpt-9' not found"


async def test_the_lifespan_passes_through(app):
    incoming = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
    sent = []

    async def receive():
        return incoming.pop(0)

    async def send(event):
        sent.append(event["type"])

    await app({"type": "lifespan"}, receive, send)
    assert sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]


@pytest.mark.parametrize(("body", "error"), [
    (b"[1]", "the request body must be a JSON object"),
    (b'{"a": ' + b"[" * 70 + b"]" * 70 + b"}", "the request JSON is nested more than 64 levels deep"),
], ids=["not-an-object", "too-deep"])  # fmt: skip
async def test_a_body_that_is_no_request_is_refused_by_name(app, body, error):
    async with client(app) as http:
        refused = await http.post("/v1/messages", headers={**HEADERS, "content-type": "application/json"},
                                  content=body)  # fmt: skip
    assert refused.status_code == 400
    assert refused.json()["error"] == {"type": "invalid_request_error", "message": error}


async def test_a_named_tool_choice_one_call_and_earlier_thinking_reach_the_model(app):
    tool = {"name": "get_weather", "description": "The weather", "input_schema": {"type": "object"}}
    request = {"model": "sonnet", "max_tokens": 16, "tools": [tool],
               "tool_choice": {"type": "tool", "name": "get_weather", "disable_parallel_tool_use": True},
               "messages": [{"role": "user", "content": "weather?"},
                            {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm",
                                                               "signature": "s"},
                                                              {"type": "text", "text": "Let me see."}]},
                            {"role": "user", "content": "go on"}]}  # fmt: skip
    SEEN.clear()
    async with client(app) as http:
        answered = await http.post("/v1/messages", headers=HEADERS, json=request)
    assert answered.status_code == 200, answered.text
    (context,) = SEEN
    assert "In this answer you must call the tool get_weather." in context.system_prompt
    assert "Call at most one tool in this answer." in context.system_prompt
    assert context.messages[1].content[0] == ThinkingContent("hmm")


@pytest.mark.parametrize(("path", "field", "value", "error"), [
    ("/v1/chat/completions", "max_completion_tokens", "64", "expected an integer"),
    ("/v1/messages", "max_tokens", 0, "must be at least 1"),
])  # fmt: skip
async def test_a_token_cap_that_is_no_count_is_refused_naming_the_field(app, path, field, value, error):
    async with client(app) as http:
        refused = await http.post(path, headers=HEADERS, json={**message("hi"), field: value})
    assert refused.status_code == 400
    assert field in refused.text and error in refused.text


async def test_a_responses_tool_choice_names_the_function_beside_its_type(app):
    tool = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}
    request = {"model": "sonnet", "input": "weather?", "tools": [tool],
               "tool_choice": {"type": "function", "name": "get_weather"}}  # fmt: skip
    SEEN.clear()
    async with client(app) as http:
        answered = await http.post("/v1/responses", headers={"authorization": f"Bearer {KEY}"}, json=request)
    assert answered.status_code == 200, answered.text
    (context,) = SEEN
    assert "In this answer you must call the tool get_weather." in context.system_prompt


def http_scope(path: str) -> dict:
    """An HTTP request to `path` with the key, as uvicorn hands it to the app."""
    return {"type": "http", "http_version": "1.1", "method": "POST", "scheme": "http", "path": path,
            "raw_path": path.encode(), "root_path": "", "query_string": b"", "server": ("127.0.0.1", 8484),
            "client": ("127.0.0.1", 50000),
            "headers": [(b"host", b"127.0.0.1:8484"), (b"content-type", b"application/json"),
                        *((name.encode(), value.encode()) for name, value in HEADERS.items())]}


async def test_a_client_gone_before_its_count_tokens_body_came_gets_no_answer(app):
    sent = []

    async def receive():
        return {"type": "http.disconnect"}

    async def send(event):
        sent.append(event)

    await app(http_scope("/v1/messages/count_tokens"), receive, send)
    assert sent == []
