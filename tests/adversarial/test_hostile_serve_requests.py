"""Hostile requests to `hostlink serve`: what broke (depth, key headers, upstream errors, cache
headers, the CLI's logs) and the classes that held (Origin/Host, smuggling, giant headers,
compressed bodies, fetched URLs, `@` paths, concurrency, signals), each with its figure.

The real server, the real `claude` CLI and the fake API; the API's own error shapes are
checked here in brief and in full in `tests/serve/test_errors.py`.
"""

from __future__ import annotations

import gzip
import json
import re
import signal
import threading

import pytest

from adversarial.serve_attack import MIB, assert_quiet, memory_mib, request
from adversarial.support import untouched_url
from hostlink.serve.body import MAX_JSON_DEPTH
from peers import requires_claude
from serve_support import (
    KEY,
    PNG,
    ServeProcess,
    fa,
)

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("fresh_script"), requires_claude]

MESSAGES, CHAT = "/v1/messages", "/v1/chat/completions"


@pytest.fixture
def since(server):
    """Where the server's stderr stood when the test began: its attack is measured from there."""
    return server.stderr_bytes()


def ask(**extra) -> dict:
    return {"model": "sonnet", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}], **extra}


def chat(**extra) -> dict:
    return {"model": "sonnet", "messages": [{"role": "user", "content": "hi"}], **extra}


def error_of(path: str, body: bytes) -> tuple[str, str]:
    """(type, message) of an error body, checked to be in the API's own shape."""
    value = json.loads(body)
    if path == MESSAGES:
        assert set(value) == {"type", "error"} and value["type"] == "error", value
    else:
        assert set(value) == {"error"} and set(value["error"]) == {"message", "type", "param", "code"}, value
    return value["error"]["type"], value["error"]["message"]


def nested_schema(levels: int) -> dict:
    schema: dict = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


# --- what broke -------------------------------------------------------------------------


@pytest.mark.parametrize("bomb", [b"[" * 100_000, b'{"a":' * 100_000, b"[" * 999 + b"]" * 999])
@pytest.mark.parametrize("path", [MESSAGES, CHAT])
def test_a_nesting_bomb_is_a_400(server, path, bomb, since):
    """Before: 500 text/plain "Internal Server Error" and a RecursionError traceback."""
    status, headers, body = request(server, "POST", path, bomb)
    assert status == 400 and headers["cache-control"] == "no-store"
    assert error_of(path, body) == ("invalid_request_error",
                                    f"the request JSON is nested more than {MAX_JSON_DEPTH} levels deep")
    assert_quiet(server, max_bytes=1024, since=since)


@pytest.mark.parametrize("path", [MESSAGES, CHAT])
def test_a_964_level_tool_schema_is_a_400(server, path, since):
    """Before: a RecursionError in the catalog's json.dumps, a plain-text 500."""
    schema = '{"type":"object","properties":{"a":' * 482 + '{"type":"string"}' + "}}" * 482  # 964 levels
    tools = ('[{"name":"deep","input_schema":%s}]' if path == MESSAGES else
             '[{"type":"function","function":{"name":"deep","parameters":%s}}]') % schema
    payload = json.dumps(ask() if path == MESSAGES else chat())[:-1] + ',"tools":' + tools + "}"
    status, _, body = request(server, "POST", path, payload.encode())
    assert status == 400 and "nested more than" in error_of(path, body)[1]
    assert_quiet(server, max_bytes=1024, since=since)


@pytest.mark.parametrize("path", [MESSAGES, CHAT])
def test_a_tool_schema_the_cli_refuses_is_a_400_naming_the_tool(server, path, since):
    """Found by the Responses API's fuzzing: `required` naming a property twice makes the CLI
    drop the tool, and its init then lacked it — a 500 "tool inventory" protocol error before."""
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city", "city"]}
    tools = ([{"name": "get_weather", "input_schema": schema}] if path == MESSAGES else
             [{"type": "function", "function": {"name": "get_weather", "parameters": schema}}])
    status, _, body = request(server, "POST", path, {**(ask() if path == MESSAGES else chat()), "tools": tools})
    assert status == 400 and "did not accept the input schema of tool get_weather" in error_of(path, body)[1]
    assert server.claude_pids() == []
    assert_quiet(server, max_bytes=1024, since=since)


def test_a_schema_within_the_depth_limit_is_served(server, api):
    api.push(fa.text("deep enough"))
    tools = [{"name": "deep", "input_schema": nested_schema(25)}]  # 51 levels of objects, 54 in the request
    status, _, body = request(server, "POST", MESSAGES, ask(tools=tools))
    assert status == 200 and json.loads(body)["content"][0]["text"] == "deep enough"


@pytest.mark.parametrize("media_type", [["image/png"], {"a": 1}, 7, None])
def test_a_media_type_that_is_not_a_string_is_a_400(server, media_type):
    """Before: ["image/png"] was `TypeError: unhashable` in core.image, a plain-text 500."""
    image = {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": PNG}}
    status, _, body = request(server, "POST", MESSAGES, ask(messages=[{"role": "user", "content": [image]}]))
    assert status == 400 and error_of(MESSAGES, body)[1].startswith("messages.0.content.0.source:")


@pytest.mark.parametrize(("x_api_key", "authorization", "expected"), [
    ("", f"Bearer {KEY}", 200),  # before: the empty x-api-key overrode the valid bearer (401)
    (KEY, f"Bearer {KEY}", 200),
    (KEY, "Basic dXNlcjpwYXNz", 200),  # not a key scheme: not a key
    (KEY, "Bearer wrong-key", 401),  # both sent: both must carry the key
    ("wrong-key", f"Bearer {KEY}", 401),
    ("", "Bearer ", 401),
])
def test_both_key_headers_must_carry_the_key(server, x_api_key, authorization, expected):
    status, headers, body = request(server, "GET", "/v1/models", None,
                                    {"x-api-key": x_api_key, "authorization": authorization})
    assert status == expected and headers["cache-control"] == "no-store"
    assert KEY.encode() not in body


@pytest.mark.parametrize("path", [MESSAGES, CHAT])
def test_an_upstream_400_is_the_clients_400(server, api, path):
    """Before: a 400 from the API reached the client as a 500. (The CLI tries a 400 three times.)"""
    api.push(*[fa.HttpError(400, "invalid_request_error", "messages: text content blocks must be non-empty")] * 3)
    status, headers, body = request(server, "POST", path, ask() if path == MESSAGES else chat())
    assert status == 400 and headers["cache-control"] == "no-store"
    assert error_of(path, body) == ("invalid_request_error", "the Claude API refused the request (HTTP 400)")


def test_every_answer_is_no_store(server, api):
    """Before: /v1/models and the error answers carried no cache-control; streams said no-cache."""
    api.push(fa.text("streamed"))
    answers = [request(server, "GET", "/v1/models"), request(server, "GET", "/v1/models/sonnet"),
               request(server, "GET", "/v1/models", None, {"x-api-key": "wrong"}),
               request(server, "GET", "/v1/nothing"), request(server, "POST", MESSAGES, b"{"),
               request(server, "POST", MESSAGES, ask(stream=True))]
    assert [status for status, _, _ in answers] == [200, 200, 401, 404, 400, 200]
    assert {headers.get("cache-control") for _, headers, _ in answers} == {"no-store"}
    assert b"streamed" in answers[-1][2]


def test_claude_leaves_no_mcp_log_in_home(server, api):
    """Before: every claude start left cache/claude-cli-nodejs/<cwd>/mcp-logs-hostlink/<time>.jsonl
    under $HOME (95 after one battery). After: the child's XDG_CACHE_HOME is its private dir."""
    api.push(fa.text("one"), fa.text("two"))
    for _ in range(2):
        assert request(server, "POST", MESSAGES, ask())[0] == 200
    server.wait_no_claude()
    assert [str(p.relative_to(server.home)) for p in server.home.rglob("*mcp-logs*")] == []


# --- what held --------------------------------------------------------------------------

ORIGINS = ["null", "http://127.0.0.1", "http://localhost", "https://127.0.0.1", "http://[::1]", "file://",
           "http://evil.example", "chrome-extension://abc", "moz-extension://abc", "vscode-webview://x", "", " ",
           "http://127.0.0.1:1", "HTTP://127.0.0.1", "http://127.0.0.1.evil.example", "*", "ws://127.0.0.1",
           "http://0.0.0.0"]


def foreign_hosts(port: int) -> list[str]:
    return ["evil.example", f"evil.example:{port}", f"127.0.0.1:{port + 1}", "127.0.0.1", f"0.0.0.0:{port}",
            f"[::1]:{port}", f"127.0.0.2:{port}", f"127.1:{port}", f"2130706433:{port}", f"localhost.:{port}",
            f"localhost.evil.example:{port}", f"127.0.0.1:{port}.evil.example", f"127.0.0.1:{port}@evil.example",
            f"127.0.0.1 :{port}", f"127.0.0.1:0{port}", "", f"user@127.0.0.1:{port}"]


def test_any_origin_and_every_foreign_host_are_403(server, since):
    hosts = foreign_hosts(server.port)
    assert (len(ORIGINS), len(hosts)) == (18, 17)
    statuses = [request(server, "GET", "/v1/models", None, {"origin": origin})[0] for origin in ORIGINS]
    statuses += [request(server, "GET", "/v1/models", None, {"host": host})[0] for host in hosts]
    assert statuses == [403] * 35
    assert_quiet(server, max_bytes=1024, since=since)


@pytest.mark.parametrize(("raw", "status"), [
    (b"POST /v1/messages HTTP/1.1\r\nHost: H\r\ncontent-length: 5\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n",
     b"401"),  # chunked framing wins, one request: refused for its missing key
    # Headers past h11's 16 KiB still arriving: refused before their end. (Whole in one read they are
    # parsed, a 401 here: whether a client's giant head arrives whole is up to the loopback's timing.)
    (b"GET /v1/models HTTP/1.1\r\nHost: H\r\nx-big: " + b"a" * (100 * 1024), b"400"),
    (b"GET /v1/models HTTP/1.1\r\nHost: H\r\nHost: evil.example\r\n\r\n", b"400"),
    (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(range(256)), b"400"),
])
def test_smuggling_and_giant_headers_are_refused_and_the_server_stays(server, raw, status, since):
    import socket

    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(raw.replace(b"Host: H", b"Host: 127.0.0.1:%d" % server.port))
        answer = b""
        while b"\r\n\r\n" not in answer or len(answer.partition(b"\r\n\r\n")[2]) < int(
                re.search(rb"content-length: (\d+)", answer)[1]):
            answer += sock.recv(65536)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 " + status) and b"cache-control: no-store" in head, head
    error = json.loads(body)["error"]  # both SDKs read it as their own error
    assert error["type"] in ("invalid_request_error", "authentication_error", "permission_error")
    assert request(server, "GET", "/v1/models")[0] == 200
    assert_quiet(server, max_bytes=2048, since=since)  # uvicorn's "Invalid HTTP request" at most once a minute


def test_a_gzip_bomb_is_never_inflated(server):
    bomb = gzip.compress(b"[" * (64 * MIB))
    before = memory_mib(server)["VmRSS"]
    status, _, body = request(server, "POST", MESSAGES, bomb, {"content-encoding": "gzip"})
    assert status == 400 and error_of(MESSAGES, body)[1] == "the request body is not UTF-8"
    assert memory_mib(server)["VmRSS"] - before < 16


def test_image_urls_are_never_fetched(server):
    with untouched_url("/a.png") as url:
        status, _, body = request(server, "POST", CHAT, chat(messages=[{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": url}}]}]))
        assert status == 400 and "fetches nothing" in error_of(CHAT, body)[1]
        status, _, _ = request(server, "POST", MESSAGES, ask(messages=[{"role": "user", "content": [
            {"type": "image", "source": {"type": "url", "url": url}}]}]))
        assert status == 400


def test_an_at_path_is_never_expanded(server, api):
    api.push(fa.text("ok"))
    status, _, _ = request(server, "POST", MESSAGES, ask(messages=[{"role": "user", "content": "@/etc/passwd"}]))
    sent = json.dumps(api.messages_requests()[-1])
    assert status == 200 and "root:x:0:0" not in sent and "@/etc/passwd" not in sent


def test_concurrency_beyond_the_slots_is_429(server, api):
    """12 at once on 4 slots: 4 x 200 and 8 x 429, each 429 before its body is read."""
    for _ in range(4):
        api.push(fa.Reply((fa.Text("slow"),), delay_before_delta=2))
    statuses: list[int] = []
    workers = [threading.Thread(target=lambda: statuses.append(request(server, "POST", MESSAGES, ask())[0]))
               for _ in range(12)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert sorted(statuses) == [200] * 4 + [429] * 8


def test_sigterm_during_a_request_leaves_nothing(api, tmp_path):
    api.push(fa.Reply((fa.Text("late"),), delay_before_delta=30))
    served = ServeProcess(tmp_path, api)
    answers: list[int] = []
    worker = threading.Thread(target=lambda: answers.append(request(served, "POST", MESSAGES, ask())[0]))
    worker.start()
    served.wait_for_claude()
    code, stderr = served.stop(signal.SIGTERM)
    worker.join(30)
    assert code == 0 and answers == [529] and "Traceback" not in stderr and len(stderr) < 1024
    assert served.leftovers() == ([], [])
