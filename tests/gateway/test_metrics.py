"""`GET /metrics` of `hostlink mcp serve --http` (the real gateway process, the demo server
upstream): a known sequence of calls counted exactly by server, tool and outcome, the servers'
states, a killed server's restart and an asked-for reconnect, read with the Prometheus client's
parser; refused without the key, for another Host and from a web page; the status page's address
said at start."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
from prometheus_client.parser import text_string_to_metric_families

from gateway_support import HOSTLINK, demo, fixture, gateway_env, leftovers, live_mentioning
from process_support import started

pytestmark = pytest.mark.anyio


@pytest.fixture
def gateway(tmp_path):
    with running(tmp_path, {"demo": demo(), "broken": {"command": str(tmp_path / "missing")}}) as found:
        yield found


@contextmanager
def running(tmp_path, servers):
    """`hostlink mcp serve --http` with `servers`: its URL and key; stopped and checked after."""
    with started([HOSTLINK, "mcp", "serve", "--http", "--port", "0"], stdout=subprocess.PIPE,
                 stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=gateway_env(tmp_path, servers),
                 cwd=tmp_path) as proc:
        try:
            first = proc.stdout.readline().decode()
            assert first, proc.stderr.read()[-3000:]
            url = first.rsplit(" ", 1)[1].strip()
            key_file = Path(proc.stdout.readline().decode().split("$(cat ", 1)[1].rstrip(")\n"))
            yield url, key_file.read_text()
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=20) == 128 + signal.SIGTERM
            said = proc.stderr.read().decode()
            assert "Traceback" not in said
    assert f"Status page: {url.removesuffix('/mcp')}/ (sign in with the key)" in said.splitlines()  # beside the URL
    assert live_mentioning(str(tmp_path)) == [] and leftovers(tmp_path) == []


async def test_calls_are_counted_by_server_tool_and_outcome(gateway):
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    url, key = gateway
    metrics_url = url.removesuffix("/mcp") + "/metrics"
    async with (httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30) as http,
                Client(streamable_http_client(url, http_client=http)) as client):
        for text in ("a", "b"):
            assert not (await client.call_tool("mcp", {"action": "call", "server": "demo", "tool": "echo",
                                                       "args": {"text": text}})).is_error
        assert (await client.call_tool("mcp", {"action": "call", "server": "demo", "tool": "<img src=x>"})).is_error
        assert (await client.call_tool("mcp", {"action": "call", "server": "nowhere", "tool": "echo"})).is_error
        assert (await client.call_tool("mcp", {"action": "call", "server": "broken", "tool": "echo"})).is_error
        assert not (await client.call_tool("mcp", {"action": "status"})).is_error  # not a tool call: not counted
        answer = await http.get(metrics_url)
        assert (await http.get(metrics_url, headers={"Authorization": "Bearer wrong"})).status_code == 401
        assert (await http.get(metrics_url, headers={"Origin": "http://127.0.0.1"})).status_code == 403
        assert (await http.get(metrics_url, headers={"Host": "evil.example"})).status_code == 403
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain")
    found = {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
             for family in text_string_to_metric_families(answer.text) for sample in family.samples}
    calls = {labels: value for (name, labels), value in found.items() if name == "hostlink_mcp_calls_total"}
    unknown_tool = next(labels for labels in calls if ("server", "demo") in labels and ("tool", "-") in labels)
    failed_start = next(labels for labels in calls if ("server", "broken") in labels)
    assert calls == {
        (("outcome", "ok"), ("server", "demo"), ("tool", "echo")): 2.0,
        unknown_tool: 1.0,
        (("outcome", "unknown_server"), ("server", "other"), ("tool", "-")): 1.0,
        failed_start: 1.0,
    }
    assert dict(unknown_tool)["outcome"] not in ("ok", "tool_error") and ("tool", "-") in failed_start
    assert found[("hostlink_mcp_call_duration_seconds_count", (("server", "demo"),))] == 3.0
    assert found[("hostlink_mcp_server_state", (("server", "demo"), ("state", "connected")))] == 1.0
    assert found[("hostlink_mcp_server_state", (("server", "broken"), ("state", "failed")))] == 1.0
    assert "<img" not in answer.text


def samples(text: str, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {tuple(sorted(sample.labels.items())): sample.value for family in text_string_to_metric_families(text)
            for sample in family.samples if sample.name == name}


async def test_a_killed_server_restarted_and_a_reconnect_are_each_counted_once(tmp_path):
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    def call(tool: str, **args):
        return client.call_tool("mcp", {"action": "call", "server": "fx", "tool": tool, "args": args})

    with running(tmp_path, {"fx": fixture()}) as (url, key):
        metrics_url = url.removesuffix("/mcp") + "/metrics"
        async with (httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30) as http,
                    Client(streamable_http_client(url, http_client=http)) as client):
            first = int((await call("pid")).content[0].text)
            before = (await http.get(metrics_url)).text
            os.kill(first, signal.SIGTERM)
            lost = await call("echo", text="after the kill")
            lost_at = time.monotonic()
            assert lost.is_error and "restarts it" in lost.content[0].text
            await anyio.sleep(lost_at + 2.1 - time.monotonic())  # the back-off, 2 s
            second = int((await call("pid")).content[0].text)
            restarted = (await http.get(metrics_url)).text
            assert not (await client.call_tool("mcp", {"action": "reconnect", "server": "fx"})).is_error
            reconnected = (await http.get(metrics_url)).text
    assert second != first
    assert samples(before, "hostlink_mcp_reconnects_total") == {}
    assert samples(restarted, "hostlink_mcp_reconnects_total") == {(("kind", "restart"), ("server", "fx")): 1.0}
    assert samples(reconnected, "hostlink_mcp_reconnects_total") == {(("kind", "restart"), ("server", "fx")): 1.0,
                                                                     (("kind", "reconnect"), ("server", "fx")): 1.0}
    assert samples(restarted, "hostlink_mcp_server_state")[(("server", "fx"), ("state", "connected"))] == 1.0
