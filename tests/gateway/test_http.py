"""`hostlink mcp serve --http`: the SDK's client with the key works; no key, a foreign
Host or an Origin is refused before the MCP server sees anything; every refusal is a JSON-RPC
error; the key file is 0600 and goes away with the server."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import time
from pathlib import Path

import httpx2
import pytest

from gateway_support import HOSTLINK, demo, gateway_env, leftovers, live_mentioning
from process_support import started

pytestmark = pytest.mark.anyio
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    """One gateway for the module's tests: each only asks (a refusal, a session of its own),
    so none depends on what another did; stopped and checked after the last."""
    tmp_path = tmp_path_factory.mktemp("gateway")
    with started([HOSTLINK, "mcp", "serve", "--http", "--port", "0"], stdout=subprocess.PIPE,
                 stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                 env=gateway_env(tmp_path, {"demo": demo()}), cwd=tmp_path) as proc:
        try:
            first = proc.stdout.readline().decode()
            assert first, proc.stderr.read()[-3000:]
            url = first.rsplit(" ", 1)[1].strip()
            key_file = Path(proc.stdout.readline().decode().split("$(cat ", 1)[1].rstrip(")\n"))
            yield url, key_file, proc
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=20) == 128 + signal.SIGTERM
            assert b"Traceback" not in proc.stderr.read()
    assert live_mentioning(str(tmp_path)) == [] and leftovers(tmp_path) == []


async def test_the_sdk_client_with_the_key(gateway):
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    url, key_file, _ = gateway
    assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600
    headers = {"Authorization": f"Bearer {key_file.read_text()}"}
    # the first call starts the demo server (importing the SDK): httpx's default 5 s is too short under load
    async with (httpx2.AsyncClient(headers=headers, timeout=30) as http,
                Client(streamable_http_client(url, http_client=http)) as client):
            assert [tool.name for tool in (await client.list_tools()).tools] == ["mcp"]
            echoed = await client.call_tool("mcp", {"action": "call", "server": "demo", "tool": "echo",
                                                    "args": {"text": "over http"}})
            assert echoed.content[0].text == "over http"


@pytest.mark.parametrize(("headers", "status"), [
    ({"Authorization": None}, 401),
    ({"Authorization": "Bearer wrong-key-wrong-key"}, 401),
    ({"Host": "evil.example:80"}, 403),
    ({"Origin": "http://127.0.0.1"}, 403),
])
def test_refusals(gateway, headers, status):
    url, key_file, _ = gateway
    sent = {"Authorization": f"Bearer {key_file.read_text()}", "Accept": "application/json, text/event-stream",
            **headers}
    sent = {key: value for key, value in sent.items() if value is not None}
    answer = httpx2.post(url, json=INIT, headers=sent)
    assert answer.status_code == status
    assert answer.json()["error"]["message"] and answer.json()["jsonrpc"] == "2.0"


def test_only_loopback(tmp_path):
    done = subprocess.run([HOSTLINK, "mcp", "serve", "--http", "--host", "0.0.0.0"], capture_output=True,
                          env=gateway_env(tmp_path, {}), timeout=30)
    assert done.returncode == 2 and b"only 127.0.0.1 or [::1]" in done.stderr


def keyed(key_file: Path, **headers: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key_file.read_text()}", "Accept": "application/json, text/event-stream",
            **headers}


def assert_json_rpc_error(answer: httpx2.Response, status: int, code: int) -> str:
    assert answer.status_code == status, (answer.status_code, answer.text[:300])
    assert answer.headers["content-type"] == "application/json", answer.headers
    error = answer.json()
    assert error["jsonrpc"] == "2.0" and error["id"] is None and error["error"]["code"] == code, error
    return error["error"]["message"]


@pytest.mark.parametrize("ident", [{"a": 1}, [1], None, True, 1.5])
def test_a_request_whose_id_is_not_a_string_or_an_integer_is_an_invalid_request(gateway, ident):
    """Before: the SDK took it for a notification, answered 202 and never answered the request."""
    url, key_file, _ = gateway
    with httpx2.Client(headers=keyed(key_file)) as http:
        session = http.post(url, json=INIT).headers["mcp-session-id"]
        headers = {"mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}
        assert http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                         headers=headers).status_code == 202
        answer = http.post(url, json={"jsonrpc": "2.0", "id": ident, "method": "tools/list"}, headers=headers)
        assert "the id must be a string or an integer" in assert_json_rpc_error(answer, 400, -32600)
        assert http.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                         headers=headers).status_code == 200


@pytest.mark.parametrize(("method", "path", "headers", "body", "status", "message"), [
    ("POST", "/mcp", {"Content-Type": "application/json"}, b" " * (4 * 1024 * 1024 + 1), 413,
     "the request body is over 4 MiB"),
    ("POST", "/mcp", {"Content-Type": "text/plain"}, b"{}", 400, "Invalid Content-Type header"),
    ("PUT", "/mcp", {}, b"", 405, "Method Not Allowed"),
    ("GET", "/elsewhere", {}, b"", 404, "Not Found"),
])
def test_the_http_layers_refusals_are_json_rpc_errors(gateway, method, path, headers, body, status, message):
    """Before: 413, "Invalid Content-Type header" and the other refusals of the HTTP layer came
    back as text/plain (or empty) while the docs promise JSON-RPC errors."""
    url, key_file, _ = gateway
    answer = httpx2.request(method, url.replace("/mcp", path), content=body, headers=keyed(key_file, **headers))
    assert message in assert_json_rpc_error(answer, status, -32600)


def test_a_body_sent_in_chunks_past_the_bound_is_refused(gateway):
    """No Content-Length to refuse by: the body is counted as it comes."""
    url, key_file, _ = gateway
    chunks = (b" " * 65536 for _ in range(4 * 16 + 1))
    answer = httpx2.post(url, content=chunks, headers=keyed(key_file, **{"Content-Type": "application/json"}))
    assert "the request body is over 4 MiB" in assert_json_rpc_error(answer, 413, -32600)


def test_a_body_that_is_not_json_is_a_parse_error(gateway):
    """The id check leaves a body it cannot read to the SDK, which says why."""
    url, key_file, _ = gateway
    answer = httpx2.post(url, content=b'{"jsonrpc": "2.0", "id": 1,',
                         headers=keyed(key_file, **{"Content-Type": "application/json"}))
    assert "Parse error" in assert_json_rpc_error(answer, 400, -32700)


def test_the_key_is_taken_only_as_a_bearer_token(gateway):
    """Before: `x-api-key` was taken too, though MCP hosts send the key as a bearer token and
    the docs name only that. Now the gateway takes the key as `hostlink serve` takes its
    Authorization header, and nothing else."""
    url, key_file, _ = gateway
    key = key_file.read_text()
    only_x_api_key = httpx2.post(url, json=INIT, headers={"x-api-key": key,
                                                          "Accept": "application/json, text/event-stream"})
    assert "Authorization: Bearer" in assert_json_rpc_error(only_x_api_key, 401, -32001)
    assert httpx2.post(url, json=INIT, headers=keyed(key_file, **{"x-api-key": "ignored"})).status_code == 200


def test_over_http_closing_stdin_does_not_stop_the_gateway_as_help_says(tmp_path):
    """Before: `--help` and the docs said closing stdin stops the gateway, and over HTTP it went
    on serving. Now they say it: over HTTP stdin is not read (a service manager's stdin is
    /dev/null), signals stop it."""
    shown = subprocess.run([HOSTLINK, "mcp", "serve", "--help"], capture_output=True, text=True, timeout=30)
    assert "over --http stdin is not read" in " ".join(shown.stdout.split())
    with started([HOSTLINK, "mcp", "serve", "--http", "--port", "0"], stdout=subprocess.PIPE,
                 stderr=subprocess.PIPE, stdin=subprocess.PIPE,
                 env=gateway_env(tmp_path, {"demo": demo()}), cwd=tmp_path) as proc:
        url = proc.stdout.readline().decode().rsplit(" ", 1)[1].strip()
        key_file = Path(proc.stdout.readline().decode().split("$(cat ", 1)[1].rstrip(")\n"))
        proc.stdin.close()
        time.sleep(1)
        assert proc.poll() is None
        assert httpx2.post(url, json=INIT, headers=keyed(key_file)).status_code == 200
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 128 + signal.SIGTERM
    assert leftovers(tmp_path) == []
