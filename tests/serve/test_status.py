"""The status page of `hostlink serve` in-process (the app over a provider that answers without
`claude`): the sign-in form and its cookie, the refusals (no key, a wrong key, a foreign Origin,
another site, a rebound Host), the limit on wrong keys, the strict policy, and a client's text
kept as data; the address `hostlink serve` prints for it."""

from __future__ import annotations

import asyncio
import re
import time

import httpx
import pytest

from host_support import answering_host
from hostlink.host import AssistantMessage, Done, TextContent, Usage
from hostlink.serve import create_app
from hostlink.serve.status import RECENT, Recent

KEY = "status-test-key-0123456789"
BASE = "http://127.0.0.1:8484"
HOSTILE = "<img src=x onerror=alert(1)>"
pytestmark = pytest.mark.anyio


async def answer(model, context, signal):
    usage = Usage(input_tokens=11, output_tokens=7)
    yield Done(AssistantMessage((TextContent("ok"),), stop_reason="stop", usage=usage), prewarmed=True,
               prewarmed_waiting=1)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The app, and the access-log lines it wrote."""
    with answering_host(answer, tmp_path_factory) as host:
        lines: list[str] = []
        yield create_app(host, token=KEY, access=lines.append), lines, host


@pytest.fixture
async def client(served):
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=served[0]), base_url=BASE) as http:
        yield http


async def sign_in(client: httpx.AsyncClient) -> httpx.Response:
    return await client.post("/", data={"key": KEY})


async def test_without_a_key_the_form_and_json_refused(client):
    page = await client.get("/")
    assert page.status_code == 401 and page.headers["content-type"].startswith("text/html")
    assert '<form method="post" action="/">' in page.text and 'type="password"' in page.text
    data = await client.get("/status.json")
    assert data.status_code == 401 and data.json() == {"error": "sign in at /"}
    assert (await client.get(f"/?key={KEY}")).status_code == 401  # a key in the URL is never taken
    assert (await client.get("/status.json", headers={"x-api-key": KEY})).status_code == 401  # the page's own sign-in


async def test_a_wrong_key_gets_the_form_again_without_a_cookie(client):
    answer = await client.post("/", data={"key": "wrong-key-0123456789"})
    assert answer.status_code == 401 and "not this server&#x27;s key" in answer.text
    assert "set-cookie" not in answer.headers and not client.cookies
    assert (await client.post("/", data={"key": KEY + "x" * 5000})).status_code == 413


async def test_wrong_keys_past_the_limit_get_429_for_any_key_until_the_window_passes(served, monkeypatch):
    from hostlink.serve import status

    monkeypatch.setattr(status, "FAILURE_SECONDS", 2.0)  # the app's own page: the module's stays open
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(served[2], token=KEY)),
                                 base_url=BASE) as own:
        wrong = [await own.post("/", data={"key": f"guess-{n}"}) for n in range(status.FAILURES)]
        last_wrong = time.monotonic()
        assert [answer.status_code for answer in wrong] == [401] * status.FAILURES
        for key in ("one-guess-more", KEY):  # the right key too: a guesser learns nothing
            limited = await own.post("/", data={"key": key})
            assert limited.status_code == 429 and "Too many wrong keys: try again in" in limited.text
            assert 1 <= int(limited.headers["retry-after"]) <= 2 and "set-cookie" not in limited.headers
            assert limited.headers["content-security-policy"].startswith("default-src 'none'")
        await asyncio.sleep(last_wrong + 2.1 - time.monotonic())
        assert (await own.post("/", data={"key": KEY})).status_code == 303


async def test_a_client_gone_before_its_key_came_gets_no_answer(served, client):
    scope = {"type": "http", "http_version": "1.1", "method": "POST", "scheme": "http", "path": "/",
             "raw_path": b"/", "root_path": "", "query_string": b"", "server": ("127.0.0.1", 8484),
             "client": ("127.0.0.1", 50000),
             "headers": [(b"host", b"127.0.0.1:8484"), (b"content-type", b"application/x-www-form-urlencoded")]}
    sent = []

    async def receive():
        return {"type": "http.disconnect"}

    async def send(event):
        sent.append(event)

    await served[0](scope, receive, send)
    assert sent == []
    assert (await sign_in(client)).status_code == 303  # the right key still signs in at once


async def test_the_right_key_sets_a_derived_strict_cookie_for_the_page_only(client):
    answer = await sign_in(client)
    assert answer.status_code == 303 and answer.headers["location"] == "/"
    cookie = answer.headers["set-cookie"]
    assert re.fullmatch(r"hostlink_status_8484=\d+\.[0-9a-f]{64}; Max-Age=43200; Path=/; HttpOnly; SameSite=Strict",
                        cookie), cookie
    assert KEY not in cookie
    page = await client.get("/")
    assert page.status_code == 200 and 'id="recent"' in page.text
    data = await client.get("/status.json")
    assert data.status_code == 200 and data.json()["title"] == "hostlink serve"
    assert (await client.get("/v1/models")).status_code == 401  # the cookie is no API key
    signed_out = await client.post("/sign-out")
    assert signed_out.status_code == 303 and "Max-Age=0" in signed_out.headers["set-cookie"]
    assert (await client.get("/status.json")).status_code == 401


async def test_a_forged_or_expired_cookie_is_refused(client):
    await sign_in(client)
    name, value = next(iter(client.cookies.items()))
    expires, mac = value.split(".")
    for forged in (f"{int(expires) + 1}.{mac}", f"{expires}.{'0' * 64}", f"1.{mac}", KEY, "", "9" * 5000 + f".{mac}"):
        client.cookies.clear()
        client.cookies.set(name, forged)
        assert (await client.get("/status.json")).status_code == 401, forged
    client.cookies.clear()
    superscript = f"{name}=\u00b2.{mac}".encode("latin-1")  # a digit to str.isdigit, not to int()
    assert (await client.get("/status.json", headers={"cookie": superscript})).status_code == 401


@pytest.mark.parametrize(("method", "path"), [("GET", "/"), ("POST", "/"), ("GET", "/status.json")])
@pytest.mark.parametrize("headers", [
    {"origin": "http://evil.example"}, {"origin": "http://127.0.0.1:9999"}, {"origin": "null"},
    {"host": "evil.example:8484"}, {"host": "evil.example:8484", "origin": "http://evil.example:8484"},
    {"sec-fetch-site": "cross-site"}, {"sec-fetch-site": "same-site"},
])
async def test_another_origin_site_or_host_is_refused(client, method, path, headers):
    await sign_in(client)
    answer = await client.request(method, path, headers=headers, data={"key": KEY} if method == "POST" else None)
    assert answer.status_code == 403 and "set-cookie" not in answer.headers


async def test_the_servers_own_origin_passes_on_the_page_only(client):
    own = {"origin": BASE, "sec-fetch-site": "same-origin"}
    assert (await client.post("/", data={"key": KEY}, headers=own)).status_code == 303
    assert (await client.get("/status.json", headers=own)).status_code == 200
    assert (await client.get("/v1/models", headers={**own, "x-api-key": KEY})).status_code == 403


async def test_a_strict_policy_with_a_fresh_nonce_per_answer(client):
    policies = []
    for _ in range(2):
        page = await client.get("/")
        policy = page.headers["content-security-policy"]
        nonce = re.search(r"'nonce-([^']+)'", policy).group(1)
        assert f'<style nonce="{nonce}">' in page.text
        policies.append(policy)
    assert policies[0] != policies[1]
    for part in ("default-src 'none'", "frame-ancestors 'none'", "form-action 'self'", "base-uri 'none'",
                 "require-trusted-types-for 'script'"):
        assert part in policies[0]
    assert "unsafe" not in policies[0] and "http" not in policies[0]
    assert page.headers["x-frame-options"] == "DENY" and page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["cache-control"] == "no-store" and page.headers["referrer-policy"] == "same-origin"
    await sign_in(client)
    page = await client.get("/")
    nonce = re.search(r"'nonce-([^']+)'", page.headers["content-security-policy"]).group(1)
    assert f'<script nonce="{nonce}">' in page.text
    assert not re.search(r"(src|href)=", page.text)  # nothing fetched but /status.json
    assert "innerHTML" not in page.text and "insertAdjacentHTML" not in page.text


async def test_recent_requests_carry_a_clients_text_as_data(client, served):
    model = f"claude-sonnet-{HOSTILE}"  # the sonnet family: answered, the name kept as the client wrote it
    done = await client.post("/v1/messages", headers={"x-api-key": KEY}, json={
        "model": model, "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]})
    assert done.status_code == 200
    await sign_in(client)
    for _ in range(3):
        data = (await client.get("/status.json")).json()
    first = data["recent"][0]  # newest first; the page's own requests are not in it
    assert {key: first[key] for key in ("endpoint", "model", "status", "input_tokens", "output_tokens",
                                        "prewarmed")} == {
        "endpoint": "POST /v1/messages", "model": model, "status": 200, "input_tokens": 11, "output_tokens": 7,
        "prewarmed": True}
    assert data["slots"] == {"in_flight": 0, "max": 4, "waiting": 1}
    assert data["plan"]["plan"] is None and data["plan"]["extra_usage_guard"]["mode"] == "warn"
    assert [key for key, _ in data["columns"]] == ["time", "endpoint", "model", "status", "ms", "input_tokens",
                                                   "output_tokens", "prewarmed"]
    page = await client.get("/")
    assert HOSTILE not in page.text and "<img" not in page.text  # the page holds no data: its script sets text
    lines = served[1]
    assert not [line for line in lines if "/status.json" in line]  # the page's polls are not logged
    assert [line for line in lines if " POST / 303 " in line]  # its sign-in is
    assert not [row for row in (await client.get("/status.json")).json()["recent"] if row["endpoint"].endswith(" /")]
    assert "<img" not in "".join(lines)


def test_the_ring_is_bounded_newest_first_with_text_cut_short():
    ring = Recent()
    for number in range(RECENT + 10):
        ring.add(time=number, model="m" * 1000, status=200, prewarmed=None)
    rows = ring.rows()
    assert len(rows) == RECENT and [row["time"] for row in rows[:2]] == [RECENT + 9, RECENT + 8]
    assert len(rows[0]["model"]) == 200 and rows[0]["status"] == 200 and rows[0]["prewarmed"] is None


def test_hostlink_serve_prints_the_page_s_address_beside_the_api_s(tmp_path, api):
    from serve_support import ServeProcess

    served = ServeProcess(tmp_path, api)
    try:
        assert served.banner[0].startswith(f"hostlink serve: listening on {served.base_url} ")
    finally:
        _, said = served.stop()
    assert f"Status page: {served.base_url}/ (sign in with the key)" in said.splitlines()
