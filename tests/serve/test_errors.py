"""Every error of `hostlink serve` with its status and each API's own error shape.

Anthropic: `{"type": "error", "error": {"type", "message"}}`; OpenAI:
`{"error": {"message", "type", "param", "code"}}`. No error carries prompt text, tool
arguments or the key. The server runs with `--max-concurrent 1`.
"""

from __future__ import annotations

import http.client
import json
import threading

import anthropic
import openai
import pytest

from peers import requires_claude
from serve_support import (
    KEY,
    PNG,
    fa,
    raw_post,
    start_server,
)

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("fresh_script"), requires_claude]

SECRET = "prompt-secret-9931"
MESSAGES = "/v1/messages"
CHAT = "/v1/chat/completions"


@pytest.fixture(scope="module")
def server(api, tmp_path_factory):
    yield from start_server(api, tmp_path_factory, "--max-concurrent", "1")


def post(server, path: str, body: bytes | dict, headers: dict | None = None) -> tuple[int, dict, dict]:
    """Status, headers and JSON body of one raw request (default headers: a valid key)."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    sent = {"host": f"127.0.0.1:{server.port}", "x-api-key": KEY, "content-type": "application/json"}
    sent.update(headers or {})
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    try:
        connection.putrequest("POST" if path != "/v1/models" else "GET", path, skip_host=True)
        for key, value in sent.items():
            if value is not None:
                connection.putheader(key, value)
        connection.putheader("content-length", str(len(data)))
        connection.endheaders(data)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, json.loads(response.read())
    finally:
        connection.close()


def anthropic_error(body: dict) -> tuple[str, str]:
    assert set(body) == {"type", "error"} and body["type"] == "error"
    assert SECRET not in json.dumps(body) and KEY not in json.dumps(body)
    return body["error"]["type"], body["error"]["message"]


def openai_error(body: dict) -> tuple[str, str]:
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}
    assert SECRET not in json.dumps(body) and KEY not in json.dumps(body)
    return body["error"]["type"], body["error"]["message"]


def ask(text: str = SECRET, **extra) -> dict:
    return {"model": "sonnet", "max_tokens": 16, "messages": [{"role": "user", "content": text}], **extra}


def chat(text: str = SECRET, **extra) -> dict:
    return {"model": "sonnet", "messages": [{"role": "user", "content": text}], **extra}


def test_malformed_json(server):
    status, _, body = post(server, MESSAGES, b'{"model": "sonnet", ' + SECRET.encode())
    assert status == 400 and anthropic_error(body)[0] == "invalid_request_error"
    status, _, body = post(server, CHAT, b"[not json " + SECRET.encode())
    assert status == 400 and openai_error(body)[0] == "invalid_request_error"


@pytest.mark.parametrize(("path", "payload", "field"), [
    (MESSAGES, {"model": "sonnet", "messages": [{"role": "user", "content": SECRET}]}, "max_tokens"),
    (MESSAGES, ask(messages=[{"role": "robot", "content": SECRET}]), "messages.0.role"),
    (MESSAGES, ask(messages=[{"role": "user", "content": [{"type": "image", "source": {
        "type": "url", "url": "https://example.invalid/a.png"}}]}]), "messages.0.content.0.source.type"),
    (MESSAGES, ask(tools=[{"name": "t"}]), "tools.0.input_schema"),
    (CHAT, chat(messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {
        "url": "https://example.invalid/a.png"}}]}]), "messages.0.content.0.image_url.url"),
    (CHAT, chat(tools=[{"type": "retrieval"}]), "tools.0.type"),
    (CHAT, {"messages": []}, "model"),
])
def test_a_schema_violation_names_the_field(server, path, payload, field):
    status, _, body = post(server, path, payload)
    shape = anthropic_error if path == MESSAGES else openai_error
    kind, message = shape(body)
    assert status == 400 and kind == "invalid_request_error" and message.startswith(field + ":")
    if path == CHAT:
        assert body["error"]["param"] == field


def test_a_url_image_is_refused_because_the_server_fetches_nothing(server):
    status, _, body = post(server, CHAT, chat(messages=[{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "http://127.0.0.1:1/x.png"}}]}]))
    assert status == 400 and "fetches nothing" in openai_error(body)[1]


def test_unknown_model_is_404(server):
    status, _, body = post(server, MESSAGES, ask(model="gpt-4o"))
    assert status == 404 and anthropic_error(body)[0] == "not_found_error"
    status, _, body = post(server, CHAT, chat(model="gpt-4o"))
    assert status == 404 and body["error"]["code"] == "model_not_found"


def test_a_body_over_32_mib_is_413(server):
    status, _, body = post(server, MESSAGES, b"{" + b" " * (32 * 1024 * 1024) + b"}")
    assert status == 413 and anthropic_error(body)[0] == "request_too_large"


def test_a_tool_result_without_its_tool_use_is_400(server):
    status, _, body = post(server, MESSAGES, ask(messages=[
        {"role": "user", "content": "hi"},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_nope", "content": SECRET}]}]))
    assert status == 400 and "no matching tool call" in anthropic_error(body)[1]
    status, _, body = post(server, CHAT, chat(messages=[
        {"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "call_nope", "content": SECRET}]))
    assert status == 400 and "no matching tool call" in openai_error(body)[1]


@pytest.mark.parametrize("messages", [
    [{"role": "assistant", "content": SECRET}, {"role": "user", "content": "hi"}],
    [{"role": "user", "content": SECRET}, {"role": "assistant", "content": "prefill"}],
    [{"role": "user", "content": "hi"},
     {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "t", "input": {"a": SECRET}}]},
     {"role": "user", "content": "no result given"}],
])
def test_roles_out_of_order_are_400(server, messages):
    status, _, body = post(server, MESSAGES, ask(messages=messages))
    assert status == 400 and anthropic_error(body)[0] == "invalid_request_error"


@pytest.mark.parametrize("headers", [{"x-api-key": None}, {"x-api-key": "wrong-key"},
                                     {"x-api-key": None, "authorization": "Bearer wrong"}])
def test_no_or_wrong_key_is_401(server, headers):
    status, _, body = post(server, MESSAGES, ask(), headers)
    assert status == 401 and anthropic_error(body)[0] == "authentication_error"
    status, _, body = post(server, CHAT, chat(), headers)
    assert status == 401 and openai_error(body)[0] == "authentication_error"


def test_the_key_works_as_a_bearer_token_too(server, api):
    api.push(fa.text("ok"))
    status, _, body = post(server, CHAT, chat(), {"x-api-key": None, "authorization": f"Bearer {KEY}"})
    assert status == 200 and body["choices"][0]["message"]["content"] == "ok"


@pytest.mark.parametrize("headers", [{"host": "evil.example:80"}, {"host": "127.0.0.1:1"},
                                     {"origin": "http://127.0.0.1"}, {"origin": "null"}])
def test_a_foreign_host_or_any_origin_is_403(server, headers):
    status, _, body = post(server, MESSAGES, ask(), headers)
    assert status == 403 and anthropic_error(body)[0] == "permission_error"
    status, _, body = post(server, "/v1/models", b"", headers)
    assert status == 403 and openai_error(body)[0] == "permission_error"


def test_more_than_max_concurrent_is_429_with_retry_after(server, api):
    api.push(fa.Reply((fa.Text("slow"),), delay_before_delta=3))
    first: list[tuple[int, dict, dict]] = []
    worker = threading.Thread(target=lambda: first.append(post(server, MESSAGES, ask())))
    worker.start()
    server.wait_for_claude()
    status, headers, body = post(server, CHAT, chat())
    worker.join(60)
    assert status == 429 and headers["retry-after"] == "1"
    assert openai_error(body)[0] == "rate_limit_error"
    assert first[0][0] == 200


def test_the_clis_usage_limit_is_429_and_an_overload_529(server, api):
    api.push(fa.usage_limit())  # resets an hour from now
    status, headers, body = post(server, MESSAGES, ask())
    assert status == 429 and anthropic_error(body) [0] == "rate_limit_error"
    assert 3500 < int(headers["retry-after"]) <= 3600 and "try again at" in anthropic_error(body)[1]
    api.push(fa.server_error())
    with pytest.raises(openai.APIStatusError) as raised, \
            openai.OpenAI(base_url=server.base_url + "/v1", api_key=KEY, max_retries=0) as client:
        client.chat.completions.create(**chat())
    assert raised.value.status_code == 529


def test_sign_in_missing_says_claude_auth_login(server, api):
    api.push(fa.HttpError(401, "authentication_error", "invalid x-api-key"))
    with pytest.raises(anthropic.AuthenticationError) as raised, \
            anthropic.Anthropic(base_url=server.base_url, api_key=KEY, max_retries=0) as client:
        client.messages.create(**ask())
    assert raised.value.status_code == 401 and "claude auth login" in raised.value.message


def test_a_failure_mid_stream_is_an_error_event(server, api):
    api.push(fa.Reply((fa.Text("partial"), fa.Text("more")), error_after_blocks=1))
    with anthropic.Anthropic(base_url=server.base_url, api_key=KEY, max_retries=0) as client, \
            pytest.raises(anthropic.APIStatusError) as raised, client.messages.stream(**ask()) as stream:
        stream.get_final_message()
    assert SECRET not in str(raised.value)


def test_unknown_paths_answer_in_the_api_shape(server):
    status, _, body = post(server, "/v1/complete", ask(), {"anthropic-version": "2023-06-01"})
    assert status == 404 and anthropic_error(body)[0] == "not_found_error"


def test_an_image_and_a_disconnect_before_the_answer_stop_claude(server, api):
    api.push(fa.Reply((fa.Text("late"),), delay_before_delta=60))
    body = json.dumps(ask(messages=[{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}]}])).encode()
    with raw_post(server, MESSAGES, body):
        server.wait_for_claude()
    server.wait_no_claude(timeout=10)
