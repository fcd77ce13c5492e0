"""The status page of `hostlink mcp serve --http` (the real gateway process, the demo server and a
server whose command is missing): its sign-in, the refusals (no key, a wrong key, a foreign
Origin, a rebound Host), the servers with their state and last error, the recent calls, and a
host's or a server's hostile text shown as text in the real Chromium."""

from __future__ import annotations

import contextlib
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from gateway_support import HOSTLINK, demo, gateway_env, leftovers, live_mentioning
from process_support import started
from status_support import browse, requires_browser, screenshot

HOSTILE = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    """The gateway's base URL and key, after three calls: one answered, one to a tool with a
    hostile name, one to the server that cannot start (its command is named with markup)."""
    root = tmp_path_factory.mktemp("gateway")
    servers = {"demo": demo(), "broken": {"command": str(root / HOSTILE)}}
    with started([HOSTLINK, "mcp", "serve", "--http", "--port", "0"], stdout=subprocess.PIPE,
                 stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=gateway_env(root, servers), cwd=root) as proc:
        try:
            first = proc.stdout.readline().decode()
            assert first, proc.stderr.read()[-3000:]
            url = first.rsplit(" ", 1)[1].strip()
            key = Path(proc.stdout.readline().decode().split("$(cat ", 1)[1].rstrip(")\n")).read_text()
            _calls(url, key)
            yield url.removesuffix("/mcp"), key
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=20) == 128 + signal.SIGTERM
            assert b"Traceback" not in proc.stderr.read()
    assert live_mentioning(str(root)) == [] and leftovers(root) == []


def _calls(url: str, key: str) -> None:
    import anyio

    async def call() -> None:
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        async with (httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30) as http,
                    Client(streamable_http_client(url, http_client=http)) as client):
            for arguments in ({"server": "demo", "tool": "echo", "args": {"text": "a"}},
                              {"server": "demo", "tool": HOSTILE}, {"server": "broken", "tool": "echo"}):
                await client.call_tool("mcp", {"action": "call", **arguments})

    anyio.run(call)


@contextlib.contextmanager
def signed_in(base: str, key: str) -> Iterator[httpx2.Client]:
    with httpx2.Client(base_url=base, timeout=10) as client:
        answer = client.post("/", data={"key": key})
        assert answer.status_code == 303 and answer.headers["location"] == "/"
        yield client


@pytest.mark.parametrize(("signed", "headers", "status"), [
    (False, {}, 401),
    (False, {"Authorization": "Bearer {key}"}, 401),  # the MCP key header is no sign-in for the page
    (True, {"Origin": "http://evil.example"}, 403),
    (True, {"Host": "evil.example"}, 403),
    (True, {"Sec-Fetch-Site": "cross-site"}, 403),
])
def test_refused_without_signing_in_from_elsewhere_or_for_another_host(gateway, signed, headers, status):
    base, key = gateway
    sent = {name: value.format(key=key) for name, value in headers.items()}
    with (signed_in(base, key) if signed else httpx2.Client(base_url=base, timeout=10)) as client:
        page, data = client.get("/", headers=sent), client.get("/status.json", headers=sent)
        refused = [page.status_code, data.status_code]
        if signed:
            refused.append(client.post("/", data={"key": key}, headers=sent).status_code)
    assert set(refused) == {status}
    if status == 401:
        assert 'type="password"' in page.text and data.json() == {"error": "sign in at /"}
    with httpx2.Client(base_url=base, timeout=10) as client:
        assert client.post("/", data={"key": "wrong-wrong-wrong-wrong"}).status_code == 401 and not client.cookies


def test_servers_and_recent_calls_carry_hostile_text_as_data(gateway):
    base, key = gateway
    with signed_in(base, key) as client:
        data = client.get("/status.json").json()
        page = client.get("/")
    assert data["title"] == "hostlink mcp serve" and data["plan"] == {"plan": None, "extra_usage_guard": None}
    servers = {server["name"]: server for server in data["servers"]}
    assert servers["demo"]["state"] == "connected" and servers["demo"]["error"] is None
    assert servers["broken"]["state"] == "failed" and HOSTILE in servers["broken"]["error"]
    calls = [(row["server"], row["tool"], row["outcome"]) for row in data["recent"]]
    assert calls[0][:2] == ("broken", "echo") and calls[0][2] != "ok"
    assert calls[1:] == [("demo", HOSTILE, calls[1][2]), ("demo", "echo", "ok")] and calls[1][2] != "ok"
    assert page.status_code == 200 and "<img" not in page.text
    assert "content-security-policy" in page.headers


@requires_browser
def test_the_browser_shows_servers_and_calls_as_text(gateway):
    base, key = gateway
    seen = browse(base + "/", key, [HOSTILE, "broken", "failed"], screenshot("mcp-serve-status.png"))
    assert seen["first"] == {"status": 401, "forms": 1} and seen["images"] == 0 and seen["dialogs"] == []
    assert any(HOSTILE in cell and cell != HOSTILE for cell in seen["cells"])  # the broken server's error
    assert "last error" in seen["headings"] and "outcome" in seen["headings"] and seen["meters"] == []
    before = seen["errors"][:seen["errorsBefore"]]
    assert [error for error in before if "status of 401" not in error] == [] and seen["markupRefused"] is True
