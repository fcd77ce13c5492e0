"""Wire-level mappings and errors of `hostlink serve` for what real clients send: model ids
of a family, `system` messages anywhere, `count_tokens`, Claude Code's probe, honoured and
refused generation fields, the Responses API's store and errors, streams cut or failed.
Raw HTTP on 127.0.0.1; the real `claude` CLI upstream against the fake Anthropic API.
"""

from __future__ import annotations

import http.client
import json
import time

import anthropic
import pytest

from peers import requires_claude
from serve_support import (
    KEY,
    PNG,
    TOOL_PREFIX,
    ServeProcess,
    fa,
    raw_post,
    read_until,
    records,
)

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("fresh_script"), requires_claude]

SECRET = "prompt-secret-5521"


def call(server, method: str, path: str, body: dict | None = None, key: str | None = KEY) -> tuple[int, dict, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    try:
        headers = {"content-type": "application/json", **({"x-api-key": key} if key else {})}
        connection.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def ok(server, path: str, body: dict) -> dict:
    status, _, data = call(server, "POST", path, body)
    assert status == 200, data
    return json.loads(data)


def failed(server, path: str, body: dict, status: int) -> dict:
    got, _, data = call(server, "POST", path, body)
    assert got == status, data
    assert SECRET not in data.decode() and KEY not in data.decode()
    return json.loads(data)["error"]


def user(text: str = SECRET) -> list[dict]:
    return [{"role": "user", "content": text}]


def sse(data: bytes) -> list[dict]:
    return [json.loads(line[6:]) for line in data.decode().splitlines()
            if line.startswith("data: ") and line != "data: [DONE]"]


@pytest.mark.parametrize("name", ["claude-sonnet-4-5-20250929", "claude-sonnet-5-5[1m]", "claude-code/sonnet"])
def test_every_id_of_a_family_means_its_alias_on_every_api(server, api, name):
    ok(server, "/v1/messages", {"model": name, "max_tokens": 8, "messages": user("a")})
    ok(server, "/v1/chat/completions", {"model": name, "messages": user("b")})
    answer = ok(server, "/v1/responses", {"model": name, "input": "c"})
    assert answer["model"] == name
    assert {request["model"] for request in api.messages_requests()[-3:]} == {"claude-sonnet-5-5"}


def test_unknown_models_and_the_model_list(server):
    assert failed(server, "/v1/messages", {"model": "claude-unknown-1", "max_tokens": 8, "messages": user()},
                  404)["type"] == "not_found_error"
    error = failed(server, "/v1/responses", {"model": "gpt-4o", "input": SECRET}, 404)
    assert error["code"] == "model_not_found" and error["param"] == "model"
    status, _, data = call(server, "GET", "/v1/models/claude-opus-4-1-20250805")
    assert status == 200 and json.loads(data)["id"] == "opus"
    status, _, data = call(server, "GET", "/v1/models")
    assert "claude-haiku-*" in json.loads(data)["data"][2]["description"]


def test_system_messages_anywhere_are_folded_in_where_they_stand(server, api):
    ok(server, "/v1/messages?beta=true", {"model": "sonnet", "max_tokens": 8, "messages": [
        {"role": "user", "content": "first"}, {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "second"}, {"role": "system", "content": "reminder-one"}]})
    ok(server, "/v1/chat/completions", {"model": "sonnet", "parallel_tool_calls": False, "messages": [
        {"role": "system", "content": "leading-system"}, {"role": "user", "content": "q"},
        {"role": "developer", "content": "reminder-two"}]})
    messages_request, chat_request = api.messages_requests()[-2:]
    last = json.dumps(records(messages_request)[-1])
    assert "second" in last and "<system-message>\\nreminder-one" in last
    assert "leading-system" in json.dumps(chat_request["system"])
    assert "Call at most one tool in this answer." in json.dumps(chat_request["system"])
    assert "<developer-message>\\nreminder-two" in json.dumps(records(chat_request)[-1])


def test_count_tokens_is_an_estimate_from_the_same_conversation(server, api):
    before = len(api.messages_requests())
    with anthropic.Anthropic(base_url=server.base_url, api_key=KEY, max_retries=0) as sdk:
        text_only = sdk.messages.count_tokens(model="claude-opus-5-5", messages=user("x" * 700))
        with_image = sdk.messages.count_tokens(model="opus", messages=[{"role": "user", "content": [
            {"type": "text", "text": "x" * 700},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}]}])
    assert 200 <= text_only.input_tokens <= 220 and with_image.input_tokens == text_only.input_tokens + 1600
    status, headers, _ = call(server, "POST", "/v1/messages/count_tokens?beta=true",
                              {"model": "sonnet", "messages": user()})
    assert status == 200 and headers["hostlink-token-count"].startswith("estimate")
    assert failed(server, "/v1/messages/count_tokens", {"messages": user()}, 400)["type"] == "invalid_request_error"
    assert len(api.messages_requests()) == before  # nothing was sent to Claude


def test_claude_codes_probe_and_unknown_paths(server):
    status, _, body = call(server, "HEAD", "/api/hello", key=None)
    assert (status, body) == (200, b"")
    status, _, data = call(server, "GET", "/v1/nothing-here")
    assert status == 404 and json.loads(data)["error"]["code"] == "not_found"
    status, _, data = call(server, "POST", "/v1/messages/batches", {})
    assert status == 404 and json.loads(data)["error"]["type"] == "not_found_error"
    assert call(server, "GET", "/v1/models", key=None)[0] == 401


@pytest.mark.parametrize(("path", "extra", "param"), [
    ("/v1/messages", {"temperature": 0.2}, "temperature"),
    ("/v1/messages", {"top_k": 5}, "top_k"),
    ("/v1/messages", {"thinking": {"type": "enabled", "budget_tokens": 2048}}, "thinking.type"),
    ("/v1/messages", {"output_config": {"effort": "extreme"}}, "output_config.effort"),
    ("/v1/chat/completions", {"seed": 7}, "seed"),
    ("/v1/chat/completions", {"stop": ["a", "b", "c", "d", "e"]}, "stop"),
    ("/v1/chat/completions", {"stop": [""]}, "stop"),
    ("/v1/chat/completions", {"stop": "x", "response_format": {"type": "json_object"}}, "stop"),
    ("/v1/chat/completions", {"logprobs": True}, "logprobs"),
    ("/v1/chat/completions", {"response_format": {"type": "json_schema", "json_schema": {
        "name": "x", "schema": {"type": 12}}}}, "response_format.json_schema.schema"),
    ("/v1/responses", {"top_p": 0.5}, "top_p"),
    ("/v1/responses", {"background": True}, "background"),
    ("/v1/responses", {"reasoning": {"effort": "enormous"}}, "reasoning.effort"),
    ("/v1/responses", {"tool_choice": {"type": "web_search"}}, "tool_choice.type"),
])
def test_fields_the_cli_cannot_honour_are_refused_by_name(server, path, extra, param):
    body = {"model": "sonnet", **({"input": SECRET} if path == "/v1/responses" else {"messages": user()}),
            **({"max_tokens": 8} if path == "/v1/messages" else {}), **extra}
    error = failed(server, path, body, 400)
    assert error["message"].startswith(param + ":")


def test_stop_sequences_cut_the_answer_where_the_api_would_have_stopped(server, api):
    said = "Thought: look it up.\nObservation: invented\nmore"
    api.script.put(fa.text(said))
    answer = ok(server, "/v1/chat/completions", {"model": "sonnet", "messages": user("a"), "stop": ["Observation:"]})
    assert answer["choices"][0]["message"]["content"] == "Thought: look it up.\n"
    assert answer["choices"][0]["finish_reason"] == "stop"
    api.script.put(fa.Reply((fa.Text(said),), chunk=4))
    status, _, data = call(server, "POST", "/v1/chat/completions", {"model": "sonnet", "messages": user("b"),
                                                                   "stream": True, "stop": "Observation:"})
    assert status == 200, data
    chunks = [chunk for chunk in sse(data) if chunk.get("choices")]
    assert "".join(chunk["choices"][0]["delta"].get("content") or "" for chunk in chunks) == "Thought: look it up.\n"
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


def test_output_caps_and_effort_reach_the_cli(server, api):
    def capped(path: str, body: dict) -> tuple[dict, dict]:
        before = len(api.messages_requests())
        api.script.put(fa.text("Cut sho", stop_reason="max_tokens"))
        answer = ok(server, path, {"model": "sonnet", **body})
        return answer, api.messages_requests()[before]  # (the CLI may ask again before it is stopped)

    message, first = capped("/v1/messages", {"max_tokens": 77, "messages": user("a"),
                                             "output_config": {"effort": "low"}, "thinking": {"type": "adaptive"}})
    assert message["stop_reason"] == "max_tokens"
    assert (first["max_tokens"], first["output_config"]) == (77, {"effort": "low"})
    chat, second = capped("/v1/chat/completions", {"max_completion_tokens": 55, "reasoning_effort": "high",
                                                   "messages": user("b")})
    assert chat["choices"][0]["finish_reason"] == "length" and second["max_tokens"] == 55
    assert second["output_config"] == {"effort": "high"}
    response, third = capped("/v1/responses", {"max_output_tokens": 33, "input": "c",
                                               "reasoning": {"effort": "minimal", "summary": "auto"}})
    assert response["status"] == "incomplete" and response["incomplete_details"] == {"reason": "max_output_tokens"}
    assert (third["max_tokens"], third["output_config"]) == (33, {"effort": "low"})


def test_stored_responses_and_their_errors(server):
    first = ok(server, "/v1/responses", {"model": "sonnet", "input": "remember me", "store": False})
    error = failed(server, "/v1/responses", {"model": "sonnet", "input": "x", "previous_response_id": first["id"]}, 404)
    assert error["param"] == "previous_response_id" and error["type"] == "invalid_request_error"
    error = failed(server, "/v1/responses", {"model": "sonnet", "input": [
        {"role": "user", "content": SECRET}, {"type": "item_reference", "id": "msg_unknown"}]}, 404)
    assert error["param"] == "input.1.id"
    error = failed(server, "/v1/responses", {"model": "sonnet", "input": [{"role": "user", "content": [
        {"type": "input_image", "image_url": "https://example.com/cat.png"}]}]}, 400)
    assert error["param"] == "input.0.content.0.image_url"


def test_a_responses_stream_failure_is_an_error_event_and_response_failed(server, api):
    api.push(fa.Reply((fa.Text("Half an ans"), fa.Text("wer")), error_after_blocks=1))
    status, _, data = call(server, "POST", "/v1/responses", {"model": "sonnet", "input": "x", "stream": True})
    events = sse(data)
    assert status == 200 and [e["type"] for e in events][-2:] == ["error", "response.failed"]
    assert events[-1]["response"]["status"] == "failed"
    assert [e["sequence_number"] for e in events] == list(range(len(events)))


def test_a_streamed_answer_that_breaks_the_schema_fails_the_response(server, api):
    api.push(fa.tool_use(TOOL_PREFIX + "respond_with_json", {"count": "three"}))
    schema = {"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]}
    error = failed(server, "/v1/responses", {"model": "sonnet", "input": "x", "stream": True,
                                             "text": {"format": {"type": "json_schema", "name": "n",
                                                                 "schema": schema}}},
                   500)  # the text is held back until checked, so the stream had not started
    assert "does not match the requested format (n)" in error["message"] and "count" in error["message"]


def test_a_messages_output_format_with_an_array_root_is_wrapped_for_the_tool(server, api):
    api.push(fa.tool_use(TOOL_PREFIX + "respond_with_json", {"value": [3, 1, 2]}))
    schema = {"type": "array", "items": {"type": "integer"}}
    message = ok(server, "/v1/messages", {"model": "sonnet", "max_tokens": 64, "messages": user("numbers"),
                                          "output_config": {"format": {"type": "json_schema", "schema": schema}}})
    assert [block["type"] for block in message["content"]] == ["text"] and message["stop_reason"] == "end_turn"
    assert json.loads(message["content"][0]["text"]) == [3, 1, 2]
    (tool,) = [t for t in api.messages_requests()[-1]["tools"] if t["name"] == TOOL_PREFIX + "respond_with_json"]
    assert tool["input_schema"]["properties"]["value"] == schema


def test_a_responses_stream_cut_by_the_client_stops_its_claude(server, api):
    api.push(fa.Reply((fa.Text("Started answering, then a long pause."),), delay_before_delta=60))
    body = json.dumps({"model": "sonnet", "stream": True, "input": "Go"}).encode()
    with raw_post(server, "/v1/responses", body, bearer=True) as connection:
        read_until(connection, b"response.output_text.delta")
        assert server.claude_pids()
    server.wait_no_claude(timeout=5)


def test_the_access_log_the_quiet_flag_and_the_preflight_warning(tmp_path, api):
    loud = ServeProcess(tmp_path / "loud", api)
    _wait_for_stderr(loud, "warning: requests will fail")  # the preflight runs beside the server
    api.push(fa.tool_use(TOOL_PREFIX + "get_weather", {"city": "Oslo"}), fa.text("Sunny."))
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
    asked = {"model": "claude-haiku-4-5", "messages": user(), "tools": [tool], "max_completion_tokens": 99}
    first = json.loads(call(loud, "POST", "/v1/chat/completions", asked)[2])["choices"][0]["message"]
    follow_up = [*asked["messages"], first, {"role": "tool", "tool_call_id": first["tool_calls"][0]["id"],
                                             "content": "sunny"}]
    assert call(loud, "POST", "/v1/chat/completions", {**asked, "messages": follow_up})[0] == 200
    call(loud, "GET", "/v1/unknown")
    _, stderr = loud.stop()
    lines = [line for line in stderr.splitlines() if " /v1/" in line]
    assert lines[0].endswith("ms in=11 out=7 prewarmed=no idle=1") and " POST /v1/chat/completions 200 " in lines[0]
    assert lines[1].endswith("prewarmed=yes idle=0")  # the follow-up took the prewarmed claude, answered: none idle
    assert lines[2].endswith("prewarmed=- idle=-")  # no provider request
    assert "model=claude-haiku-4-5" in lines[0] and " GET /v1/unknown 404 model=- " in lines[2]
    assert SECRET not in stderr and KEY not in stderr
    assert "warning: requests will fail until this is fixed: sign-in: not signed in" in stderr
    quiet = ServeProcess(tmp_path / "quiet", api, "--quiet")
    call(quiet, "GET", "/v1/models")
    _, stderr = quiet.stop()
    assert " /v1/models " not in stderr
    assert loud.leftovers() == quiet.leftovers() == ([], [])


def _wait_for_stderr(server: ServeProcess, text: str, timeout: float = 60) -> None:
    """Until the server's stderr (a file) holds `text`."""
    deadline = time.monotonic() + timeout
    while text not in server.stderr():
        assert time.monotonic() < deadline, f"no {text!r} on stderr: {server.stderr()[-2000:]}"
        time.sleep(0.05)
