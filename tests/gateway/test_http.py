"""`hostlink mcp serve --http`: the SDK's client with the key works; no key, a foreign
Host or an Origin is refused before the MCP server sees anything; the key file is 0600 and
goes away with the server."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
from pathlib import Path

import httpx2
import pytest

from gateway_support import HOSTLINK, demo, gateway_env, leftovers, live_mentioning
from process_support import started

pytestmark = pytest.mark.anyio
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


@pytest.fixture
def gateway(tmp_path):
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
    async with (httpx2.AsyncClient(headers=headers) as http,
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
