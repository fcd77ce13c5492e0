"""The Claude plan on `hostlink serve`: `GET /v1/usage`, the `anthropic-ratelimit-unified-*`
headers on every answer of both APIs, the extra-usage guard (429 with `retry-after` and the
reset time in each API's error shape; `hostlink-extra-usage` under warn) and plan refusals —
the real CLI signed in by a setup token (the test option) against the fake API's headers.
"""

from __future__ import annotations

import http.client
import json
import sys
import time
from pathlib import Path

import pytest

from hostlink.claude_code import plan
from peers import CLAUDE, NODE_BIN, requires_claude
from serve_support import KEY, ServeProcess, fa

pytestmark = [pytest.mark.slow, requires_claude]

MESSAGES = {"model": "claude-code/sonnet", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
CHAT = {"model": "claude-code/sonnet", "messages": [{"role": "user", "content": "hi"}]}
PREFIX = "anthropic-ratelimit-unified-"


class Counting:
    """A `claude` first on PATH that logs each start (the server's children start it)."""

    def __init__(self, root: Path) -> None:
        self.bin = root / "bin"
        self.bin.mkdir(parents=True)
        self.log = root / "starts.log"
        (self.bin / "claude").write_text(f'#!/bin/sh\necho start >> "{self.log}"\nexec "{CLAUDE}" "$@"\n')
        (self.bin / "claude").chmod(0o755)
        self.path = f"{self.bin}:{NODE_BIN}:{Path(sys.executable).parent}:/usr/bin:/bin"

    @property
    def starts(self) -> int:
        return len(self.log.read_text().splitlines()) if self.log.exists() else 0


def request(server: ServeProcess, method: str, path: str, body: dict | None = None,
            key: str | None = KEY) -> tuple[int, dict[str, str], dict]:
    data = json.dumps(body).encode() if body is not None else b""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    try:
        headers = {"host": f"127.0.0.1:{server.port}", "content-type": "application/json"}
        if key is not None:
            headers["x-api-key"] = key
        connection.request(method, path, data if body is not None else None, headers)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, json.loads(response.read())
    finally:
        connection.close()


def plan_gauges(server: ServeProcess) -> dict[tuple[str, str], float]:
    """The plan's gauges of `GET /metrics`, read with the Prometheus client's parser."""
    from prometheus_client.parser import text_string_to_metric_families

    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    try:
        connection.request("GET", "/metrics", headers={"host": f"127.0.0.1:{server.port}", "x-api-key": KEY})
        text = connection.getresponse().read().decode()
    finally:
        connection.close()
    return {(sample.name, sample.labels["window"]): sample.value for family in text_string_to_metric_families(text)
            for sample in family.samples if sample.name.startswith("hostlink_plan_")}


def served(api, root: Path, mode: str) -> tuple[ServeProcess, Counting]:
    counting = Counting(root)
    return ServeProcess(root, api, "--subscription", "--extra-usage", mode, path=counting.path), counting


def stop(server: ServeProcess) -> None:
    server.stop()
    processes, files = server.leftovers()
    assert processes == [] and files == []


def test_usage_headers_and_refuse_on_both_apis(api, tmp_path):
    server, counting = served(api, tmp_path / "refuse", "refuse")
    try:
        status, _, body = request(server, "GET", "/v1/usage", key=None)
        assert status == 401
        status, headers, body = request(server, "GET", "/v1/usage")
        assert status == 200 and body["plan"] is None and body["extra_usage_guard"]["mode"] == "refuse"
        assert not [name for name in headers if name.startswith(PREFIX)]

        api.headers = fa.plan_headers(utilization=0.3)
        for path, payload in (("/v1/messages", MESSAGES), ("/v1/chat/completions", CHAT)):
            status, headers, _ = request(server, "POST", path, payload)
            assert status == 200
            assert headers[PREFIX + "status"] == "allowed" and headers[PREFIX + "5h-utilization"] == "0.3"
            assert headers[PREFIX + "representative-claim"] == "five_hour"
            assert headers[PREFIX + "overage-status"] == "allowed"
        status, headers, _ = request(server, "GET", "/v1/models")
        assert headers[PREFIX + "5h-reset"] == api.headers[PREFIX + "5h-reset"]  # on every answer
        assert plan_gauges(server) == {("hostlink_plan_utilization", "five_hour"): 0.3,
                                        ("hostlink_plan_resets_at_seconds", "five_hour"):
                                            float(api.headers[PREFIX + "5h-reset"])}

        resets_at = int(time.time()) + 3600
        api.headers = fa.drawing_extra_usage(resets_at)
        status, headers, _ = request(server, "POST", "/v1/messages", MESSAGES)
        assert status == 200 and headers[PREFIX + "overage-in-use"] == "true"
        assert headers[PREFIX + "status"] == "rejected"
        starts, sent = counting.starts, len(api.messages_requests())
        status, headers, body = request(server, "POST", "/v1/messages", MESSAGES)
        assert status == 429 and 3500 < int(headers["retry-after"]) <= 3600
        assert body["error"]["type"] == "rate_limit_error" and body["error"]["resets_at"] == resets_at
        assert "5-hour window" in body["error"]["message"] and plan.local_time(resets_at) in body["error"]["message"]
        status, headers, body = request(server, "POST", "/v1/chat/completions", {**CHAT, "stream": True})
        assert status == 429 and body["error"]["type"] == "rate_limit_error" and body["error"]["resets_at"] == resets_at
        assert (counting.starts, len(api.messages_requests())) == (starts, sent)  # no claude, no API request

        status, _, body = request(server, "GET", "/v1/usage")
        assert body["plan"]["draws_extra_usage"] is True and body["plan"]["windows"][0]["utilization"] == 1
        assert body["extra_usage_guard"] == {"mode": "refuse", "refusing": True, "refused_until": resets_at}
    finally:
        stop(server)


def test_warn_marks_answers_and_plan_refusals_are_403_never_retried(api, tmp_path):
    server, counting = served(api, tmp_path / "warn", "warn")
    try:
        api.headers = fa.drawing_extra_usage()
        for _ in range(2):
            status, headers, _ = request(server, "POST", "/v1/chat/completions", CHAT)
            assert status == 200 and headers["hostlink-extra-usage"] == "in-use"

        api.headers = fa.plan_headers(overage_status="rejected", disabled_reason="org_level_disabled")
        status, headers, _ = request(server, "GET", "/v1/models")
        assert "hostlink-extra-usage" in headers  # still the last report: warn until one says otherwise
        for path, payload, kind in (("/v1/messages", MESSAGES, "permission_error"),
                                    ("/v1/chat/completions", CHAT, "permission_error")):
            starts = counting.starts
            api.push(fa.HttpError(403, "permission_error", "Third-party apps now draw from your extra usage."))
            status, headers, body = request(server, "POST", path, payload)
            assert status == 403 and "check the Claude plan's settings" in json.dumps(body)
            assert "Third-party" not in json.dumps(body) and counting.starts == starts + 1
            assert kind in json.dumps(body)
        # a refused request carries no report (the CLI writes none for a 403); the next answer does
        status, headers, _ = request(server, "POST", "/v1/messages", MESSAGES)
        assert status == 200 and headers[PREFIX + "overage-disabled-reason"] == "org_level_disabled"
        status, headers, body = request(server, "GET", "/v1/usage")
        assert body["plan"]["extra_usage_disabled_reason"] == "org_level_disabled"
        assert "hostlink-extra-usage" not in headers
    finally:
        stop(server)


def test_a_report_says_nothing_of_a_window_that_reset_or_one_the_api_does_not_name():
    from hostlink.serve.usage import unified_headers

    now = 1_000_000
    report = plan.PlanUsage(seen_at=now - 10, status="rejected", window="five_hour", resets_at=now - 1, windows=(
        plan.Window("five_hour", utilization=1.0, resets_at=now - 1),
        plan.Window("seven_day", utilization=0.4, resets_at=now + 3600),
        plan.Window("next_century", utilization=0.9, resets_at=now + 3600)))
    assert dict(unified_headers(report, now)) == {PREFIX + "7d-utilization": "0.4", PREFIX + "7d-reset": "1003600"}


def test_the_plan_metrics_show_of_each_window_only_what_it_reported():
    from prometheus_client.parser import text_string_to_metric_families

    from hostlink.serve.metrics import ServeMetrics

    report = plan.PlanUsage(seen_at=1_000_000, status="allowed", windows=(
        plan.Window("five_hour", utilization=0.3), plan.Window("seven_day", resets_at=1_003_600)))
    scraped = ServeMetrics(lambda: 0, 1, lambda: report).text().decode()
    plans = {(sample.name, sample.labels["window"]): sample.value
             for family in text_string_to_metric_families(scraped) for sample in family.samples
             if sample.name.startswith("hostlink_plan_")}
    assert plans == {("hostlink_plan_utilization", "five_hour"): 0.3,
                     ("hostlink_plan_resets_at_seconds", "seven_day"): 1_003_600}
