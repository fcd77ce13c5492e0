"""Hostile servers behind `hostlink mcp serve`: whatever they send, the MCP host gets no
escape or control character in any text, no unbounded answer, no traceback, and the gateway
keeps serving; what a hostile client sends gets a JSON-RPC error."""

from __future__ import annotations

import contextlib
import json
import resource
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import httpx2
import pytest

from adversarial.serve_attack import open_after, pipelining_non_readers, settled
from adversarial.support import CONTROL, PEAK_RSS, PEAK_RSS_MIB, stdio

sys.path.insert(0, str(Path(__file__).parents[1]))
from gateway_support import HOSTLINK, demo, gateway_env, http_gateway, http_host, leftovers
from hostlink.serve.connections import WRITE_SECONDS
from process_support import started

HERE = Path(__file__).parent
MAX_ANSWER_BYTES = 128 * 1024  # a call's answer: 50 KiB of text, JSON-escaped, plus its frame
MAX_LISTING_BYTES = 2 * 1024 * 1024 + 1024  # the tools face's listing, at most 2 MiB of tools
STDIO_ATTACKS = {
    "huge": stdio("huge-name"), "err": stdio("tool-error", "-32000"), "utf8": stdio("bad-utf8"),
    "line": stdio("big-line", "50"), "items": stdio("many-items", "100000"), "logs": stdio("log-flood", "2000"),
    "notes": stdio("notification-flood", "2000"), "asks": stdio("server-request"), "fatal": stdio("fatal"),
    "noise": stdio("noise"), "many": stdio("many-tools"),
}


class Host:
    """A raw MCP host on the gateway's stdio: one request at a time, every line checked."""

    def __init__(self, tmp_path: Path, servers: dict, *args: str) -> None:
        self.report = tmp_path / "peak-rss.json"  # the gateway's own peak, not this worker's (see peak_rss.py)
        self.proc = subprocess.Popen([sys.executable, str(PEAK_RSS), str(self.report), HOSTLINK, "mcp", "serve", *args],
                                     stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=gateway_env(tmp_path, servers), cwd=tmp_path)
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "hostile-test", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict | bytes) -> None:
        raw = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.proc.stdin.write(raw + b"\n")
        self.proc.stdin.flush()

    def answer(self, ident, limit: int = MAX_ANSWER_BYTES) -> dict:
        while True:
            line = self.proc.stdout.readline()
            assert line, "the gateway ended"
            assert len(line) <= limit, f"an answer of {len(line)} bytes"
            message = json.loads(line)
            for text in strings(message):
                assert CONTROL.search(text.encode()) is None, f"a control character reached the host: {text[:200]!r}"
            if message.get("id") == ident:
                return message

    def request(self, method: str, params: dict | None = None, limit: int = MAX_ANSWER_BYTES) -> dict:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, **({"params": params} if params else {})})
        return self.answer(self.next_id, limit)

    def call(self, arguments: dict) -> dict:
        return self.request("tools/call", {"name": "mcp", "arguments": arguments})["result"]

    def close(self) -> bytes:
        self.proc.stdin.close()
        err = self.proc.stderr.read()
        self.proc.wait(timeout=60)
        self.proc.stdout.close()
        self.proc.stderr.close()
        assert json.loads(self.report.read_text())["maxrss_kib"] / 1024 < PEAK_RSS_MIB
        return err


def strings(value):
    if isinstance(value, str):
        yield value.replace("\n", "").replace("\t", "")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from strings(key)
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def text(result: dict) -> str:
    return "\n".join(block.get("text", "") for block in result["content"])


@pytest.mark.slow
def test_hostile_stdio_servers_behind_the_proxy_face(tmp_path):
    host = Host(tmp_path, STDIO_ATTACKS)
    try:
        answers = {name: host.call({"action": "call", "server": name, "tool": "boom"})
                   for name in ("huge", "err", "utf8", "line", "items", "logs", "notes", "asks", "fatal", "noise")}
        listing = host.call({"action": "tools", "server": "many", "limit": 50})
        status = host.call({"action": "status"})
        still = host.call({"action": "call", "server": "err", "tool": "ok"})
    finally:
        err = host.close()
    assert "tool refused" in text(answers["err"]) and answers["err"]["isError"]
    assert "[output truncated: " in text(answers["line"])
    assert "'fatal'" in text(answers["fatal"]) and answers["fatal"]["isError"]
    assert "refused: True" in text(answers["asks"])
    assert "tools 1-50 of 20000" in text(listing)
    assert "huge" in text(status)
    assert text(still) == "still here"
    assert b"Traceback" not in err and CONTROL.search(err.replace(b"\n", b"").replace(b"\t", b"")) is None
    assert leftovers(tmp_path) == []


@pytest.mark.slow
def test_hostile_servers_behind_the_tools_face(tmp_path):
    host = Host(tmp_path, {"many": stdio("many-tools"), "huge": stdio("huge-name"), "line": stdio("big-line", "5")},
                "--expose", "tools")
    try:
        tools = host.request("tools/list", limit=MAX_LISTING_BYTES)["result"]["tools"]
        big = host.request("tools/call", {"name": "line__boom", "arguments": {}})["result"]
    finally:
        err = host.close()
    assert len(tools) == 1000 and all(len(tool["name"]) <= 64 for tool in tools)
    assert "[output truncated: " in text(big)
    assert b"left out: at most 1000 are offered" in err and b"Traceback" not in err


@pytest.mark.slow
@pytest.mark.serial  # each hostile server's setup and call must fit in its 2 s
def test_hostile_http_servers_behind_the_gateway(tmp_path, hostile):
    bounds = {"requestTimeoutMs": 2000, "toolTimeoutMs": 2000}
    servers = {name: {"url": f"{hostile}/{name}/mcp", "protocolVersion": "legacy", **bounds}
               for name in ("bomb-call", "bomb-init", "redirect", "endless-sse")}
    servers["endless-sse"]["toolTimeoutMs"] = 1000  # its call waits the bound out: as well proven at 1 s
    host = Host(tmp_path, servers)
    try:
        answers = {name: host.call({"action": "call", "server": name, "tool": "boom"}) for name in servers}
    finally:
        err = host.close()
    for name, answer in answers.items():
        assert answer["isError"] and f"'{name}'" in text(answer) and len(text(answer)) < 2000, (name, answer)
    assert b"Traceback" not in err


def test_hostile_client_messages_get_json_rpc_errors(tmp_path):
    host = Host(tmp_path, {"fatal": stdio("fatal")})
    try:
        host.send(b"this is not json \x1b[31m")
        host.send(b'{"jsonrpc": "2.0", "id": "x", "method": "tools/call", "params": {"name": "mcp", "arguments": 7}}')
        bad_arguments = host.answer("x")
        host.send(b'{"jsonrpc": "2.0", "id": "y", "method": "tools/call", "params": {"name": "nope"}}')
        unknown = host.answer("y")
        huge = host.call({"action": "call", "server": "x" * 100_000, "tool": "\x1b]0;owned\x07"})
        still = host.request("tools/list")
    finally:
        err = host.close()
    assert bad_arguments["error"]["code"] == -32602
    assert unknown["result"]["isError"] and "Unknown tool" in text(unknown["result"])
    assert huge["isError"] and len(text(huge)) < 2000
    assert [tool["name"] for tool in still["result"]["tools"]] == ["mcp"]
    assert b"Traceback" not in err


FLOOD = 20_000
MAX_FLOOD_GROWTH_MIB = 16  # 0.8 KiB an update, as 32 MiB was for 40,000: keeping each update would pass it


def _status_mib(pid: int, field: str) -> float:
    """A memory figure of /proc/PID/status (VmRSS: now; VmHWM: the peak so far), in MiB."""
    line = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith(field + ":"))
    return int(line.split()[1]) / 1024


def stalled_host(gateway, uri: str) -> socket.socket:
    """An MCP host on the gateway's HTTP that subscribes to `uri`, opens its GET stream (where
    updates go) on a socket with a small receive buffer, and never reads it."""
    headers = {**gateway.headers, "Accept": "application/json, text/event-stream"}
    with httpx2.Client(headers=headers, timeout=60) as http:
        opened = http.post(gateway.url, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "stalled", "version": "1"}}})
        session = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
        http.post(gateway.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
        subscribed = http.post(gateway.url, headers=session, json={
            "jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": uri}})
        assert '"result":{}' in subscribed.text.replace(" ", ""), subscribed.text
    address = urlsplit(gateway.url)
    stream = socket.socket()
    stream.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stream.connect((address.hostname, address.port))
    lines = [f"GET {address.path} HTTP/1.1", f"Host: {address.netloc}", f"Authorization: {headers['Authorization']}",
             "Accept: text/event-stream", *(f"{name}: {value}" for name, value in session.items())]
    stream.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    return stream


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")  # resources/subscribe
async def test_a_flood_of_updates_with_a_host_that_never_reads(tmp_path):
    """20,000 updates of a resource two hosts follow, one of which never reads: the gateway's
    memory stays bounded, and the host that reads hears each update, or a count of those
    coalesced into the one it hears."""
    uri = "hostlink://flood/flood://r"
    heard = {"notifications": 0, "updates": 0}

    async def on_message(message) -> None:
        if getattr(message, "method", None) == "notifications/resources/updated":
            meta = message.params.meta or {}
            heard["notifications"] += 1
            heard["updates"] += 1 + meta.get("hostlink/coalesced", 0) + meta.get("hostlink/dropped", 0)

    with http_gateway(tmp_path, {"flood": stdio("update-flood", str(FLOOD))}, "--expose", "tools") as gateway:
        stalled = stalled_host(gateway, uri)
        try:
            async with http_host(gateway, message_handler=on_message) as reader:
                await reader.session.subscribe_resource(uri)
                before = _status_mib(gateway.proc.pid, "VmRSS")
                answer = await reader.call_tool("flood__boom", {})  # answered, then the flood
                with anyio.fail_after(600):  # each update is a message through the SDK, twice: minutes under load
                    while heard["updates"] < FLOOD:
                        await anyio.sleep(0.1)
                peak = _status_mib(gateway.proc.pid, "VmHWM")
                still = await reader.call_tool("flood__ok", {})
        finally:
            stalled.close()
    print(f"gateway RSS {before:.0f} MiB before, peak {peak:.0f} MiB; the reader heard {heard}")
    assert answer.content[0].text == "flooding" and still.content[0].text == "still here"
    assert heard["updates"] == FLOOD
    assert peak - before <= MAX_FLOOD_GROWTH_MIB


@contextlib.contextmanager
def limited_http_gateway(tmp_path: Path, nofile: int | None = None) -> Iterator[tuple[subprocess.Popen, int, str]]:
    """`hostlink mcp serve --http` (under `ulimit -n nofile`): its process, port and key."""
    limit = None if nofile is None else (lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile)))
    with started([HOSTLINK, "mcp", "serve", "--http", "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                 stdin=subprocess.DEVNULL, env=gateway_env(tmp_path, {"demo": demo()}), cwd=tmp_path,
                 preexec_fn=limit) as proc:
        first = proc.stdout.readline().decode()
        assert first, proc.stderr.read()[-3000:]
        port = int(first.rsplit(":", 1)[1].split("/")[0])
        key = Path(proc.stdout.readline().decode().split("$(cat ", 1)[1].rstrip(")\n")).read_text()
        yield proc, port, key
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 128 + signal.SIGTERM
        assert b"Traceback" not in proc.stderr.read()
    assert leftovers(tmp_path) == []


def keyed_initialize_seconds(port: int, key: str) -> float:
    """How long a keyed `initialize` takes to answer 200 (fails naming what came instead)."""
    started_at = time.monotonic()
    try:
        answer = httpx2.post(f"http://127.0.0.1:{port}/mcp", timeout=10, json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
            headers={"Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream"})
    except httpx2.HTTPError as error:
        waited = time.monotonic() - started_at
        raise AssertionError(f"the keyed request failed after {waited:.1f} s: {error!r}") from None
    assert answer.status_code == 200, (answer.status_code, answer.text[:300])
    return time.monotonic() - started_at


@pytest.mark.slow
@pytest.mark.serial
@pytest.mark.parametrize(("nofile", "attackers"), [(256, 120), (None, 262)])
def test_pipelining_clients_that_never_read_never_lock_out_a_keyed_client(tmp_path, nofile, attackers):
    """Before: under `ulimit -n 256` (a bound of 116) 120 connections without the key, each
    pipelining 1,500 `GET /mcp` in one write and never reading the 401s, held the whole bound
    (each answer's write stalled: neither idle nor timed out) and a keyed `initialize` was
    closed at once; 262 did the same to the default bound of 256. After: the stalled writers
    are closed first, the keyed client answers at once, and the write deadline closes every
    attacker."""
    with limited_http_gateway(tmp_path, nofile) as (proc, port, key):
        held = pipelining_non_readers(port, attackers, "/mcp")
        try:
            settled(proc.pid)
            assert keyed_initialize_seconds(port, key) < 2
            if nofile is not None:
                still_open = open_after(held, WRITE_SECONDS + 2)
                assert still_open == [], f"{len(still_open)} of {len(held)} pipelining connections still open"
        finally:
            for sock in held:
                sock.close()
