"""`GET /metrics` of the real `hostlink serve` process (real `claude` CLI, fake API): a known
sequence of requests, counted exactly, read with the Prometheus client's own parser; refused
without the key and from a web page, like every route."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from peers import requires_claude
from serve_support import KEY, fa

pytestmark = [pytest.mark.slow, requires_claude, pytest.mark.usefixtures("fresh_script")]


def call(server, method: str, path: str, body: dict | None = None, headers: dict | None = None) -> tuple[int, bytes]:
    sent = {"x-api-key": KEY, "content-type": "application/json", **(headers or {})}
    request = urllib.request.Request(server.base_url + path, method=method, headers={
        key: value for key, value in sent.items() if value is not None},
        data=None if body is None else json.dumps(body).encode())
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def test_a_known_sequence_of_requests_is_counted_exactly(server, api):
    api.push(fa.text("one"), fa.text("two"))
    status, body = call(server, "POST", "/v1/messages", {"model": "sonnet", "max_tokens": 50,
                                                         "messages": [{"role": "user", "content": "hi"}]})
    first = json.loads(body)
    status2, body2 = call(server, "POST", "/v1/chat/completions", {
        "model": "claude-sonnet-5-5", "messages": [{"role": "user", "content": "hi"}]})
    second = json.loads(body2)
    assert (status, status2) == (200, 200)
    assert call(server, "POST", "/v1/messages", {"model": "sonnet"})[0] == 400
    assert call(server, "POST", "/v1/messages", {"model": "<img src=x onerror=alert(1)>", "max_tokens": 5,
                                                 "messages": [{"role": "user", "content": "hi"}]})[0] == 404
    assert call(server, "POST", "/v1/messages", {}, {"x-api-key": None})[0] == 401
    assert call(server, "GET", "/v1/models")[0] == 200
    assert call(server, "GET", "/metrics", headers={"x-api-key": None})[0] == 401
    assert call(server, "GET", "/metrics", headers={"origin": "http://evil.example"})[0] == 403
    status, text = call(server, "GET", "/metrics")
    assert status == 200
    found = samples(text.decode())
    requests = {labels: value for (name, labels), value in found.items() if name == "hostlink_serve_requests_total"}
    assert requests == {
        (("endpoint", "/v1/messages"), ("model", "sonnet"), ("status", "200")): 1.0,
        (("endpoint", "/v1/chat/completions"), ("model", "sonnet"), ("status", "200")): 1.0,
        (("endpoint", "/v1/messages"), ("model", "-"), ("status", "400")): 1.0,  # unparsed: no model label
        (("endpoint", "/v1/messages"), ("model", "-"), ("status", "404")): 1.0,  # no such model: not a label
        (("endpoint", "/v1/messages"), ("model", "-"), ("status", "401")): 1.0,
        (("endpoint", "/v1/models"), ("model", "-"), ("status", "200")): 1.0,
        (("endpoint", "/metrics"), ("model", "-"), ("status", "401")): 1.0,
        (("endpoint", "/metrics"), ("model", "-"), ("status", "403")): 1.0,
    }
    inputs = first["usage"]["input_tokens"] + second["usage"]["prompt_tokens"]
    outputs = first["usage"]["output_tokens"] + second["usage"]["completion_tokens"]
    assert found[("hostlink_serve_tokens_total", (("direction", "input"),))] == inputs
    assert found[("hostlink_serve_tokens_total", (("direction", "output"),))] == outputs
    assert found[("hostlink_serve_prewarm_total", (("outcome", "miss"),))] == 2.0  # text answers: no follow-up
    assert found[("hostlink_serve_request_duration_seconds_count", (("endpoint", "/v1/messages"),))] == 4.0
    assert found[("hostlink_serve_time_to_first_token_seconds_count", (("endpoint", "/v1/messages"),))] == 1.0
    assert found[("hostlink_serve_time_to_first_token_seconds_count", (("endpoint", "/v1/chat/completions"),))] == 1
    assert found[("hostlink_serve_in_flight", ())] == 0.0 and found[("hostlink_serve_slots", ())] == 4.0
    assert "<img" not in text.decode()
