"""`hostlink serve` on Windows with the real claude.exe, against the fake Anthropic API on 127.0.0.1:
a text answer, a tool proposal as OpenAI `tool_calls` (through the proposal server), a request
cut by its client and a server killed hard (TerminateProcess) each leave no `claude.exe` within
10 s, and a request that ends normally leaves nothing of its private state.

One server serves the module (under Wine each start costs seconds, each request ~20 s); the
hard kill needs one of its own. The server is tests/serve_host.py (`hostlink serve` with the
provider pointed at the fake API), as in the Linux serve tests."""

from __future__ import annotations

import http.client
import json
import os
import queue
import socket
import subprocess
import sys
import threading
from pathlib import Path

import fake_anthropic as fa  # tests/fakes, on the path through the conftest
import pytest

from windows_support import WINDOWS_ONLY, descendants, end_leftovers, profile_environ, running, wait_until

pytestmark = WINDOWS_ONLY

KEY = "serve-test-key-0123456789"
SERVE_HOST = Path(__file__).parents[1] / "serve_host.py"
TOOL_PREFIX = "mcp__hostlink__"  # how Claude names a client tool (the proposal server's catalog)
CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
WEATHER = {"type": "function",
           "function": {"name": "get_weather", "description": "The weather of a city.", "parameters": CITY}}
METRICS_FILE = "claude-code-last-request.json"
START_SECONDS = 120  # under Wine a Python start with hostlink's imports takes seconds; the doctor's claude.exe more
REQUEST_SECONDS = 180  # claude.exe -p answers in about 20 s under Wine
GONE_SECONDS = 10  # the acceptance bound for a request's claude.exe to be gone


class WindowsServe:
    """`hostlink serve` as a Windows process with its own profile, temp and runtime folders;
    its claude.exe comes from the lane (PATH)."""

    def __init__(self, root: Path, api: fa.FakeAnthropic, claude_exe: Path) -> None:
        self.root, self.home, self.temp, self.runtime = root, root / "home", root / "temp", root / "runtime"
        env = profile_environ(self.home, self.temp, claude_exe)
        env.update(HOSTLINK_RUNTIME_DIR=str(self.runtime), SERVE_TEST_KEY=KEY)
        self.process = subprocess.Popen(
            [sys.executable, str(SERVE_HOST), api.base_url, "--token-env", "SERVE_TEST_KEY"], cwd=self.home, env=env,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8")
        self._lines: queue.Queue[str] = queue.Queue()
        self._stderr: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self._stderr.extend(self.process.stderr), daemon=True).start()
        self.own_files: list[str] = []
        self.banner = [self._line() for _ in range(5)]
        self.base_url = self.banner[0].split("listening on ")[1].split(" ")[0]
        self.port = int(self.base_url.rsplit(":", 1)[1])

    def _read(self) -> None:
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put("")

    def _line(self) -> str:
        try:
            line = self._lines.get(timeout=START_SECONDS)
        except queue.Empty:
            line = ""
        if not line:
            self.stop()
            raise AssertionError(f"hostlink serve did not start: {self.stderr()[-3000:]}")
        return line.rstrip("\n")

    def stderr(self) -> str:
        return "".join(self._stderr)

    def claude_children(self) -> dict[int, str]:
        """Every live process below the server: its requests' claude.exe and their proposal servers."""
        return descendants(self.process.pid)

    def wait_idle(self, timeout: float = GONE_SECONDS) -> None:
        """Until no process runs below the server (the start-up check's included)."""
        wait_until(lambda: not self.claude_children(), timeout,
                   f"processes still run below hostlink serve: {self.claude_children()}")

    def wait_clean(self) -> None:
        """Until no process runs below the server and no request's private file is left (a
        request removes its folder once its child has ended: just after, not with it)."""
        self.wait_idle()
        wait_until(lambda: self.private_leftovers() == [], GONE_SECONDS,
                   f"private state left: {self.private_leftovers()}")

    def private_files(self) -> list[str]:
        """What is in the runtime root (the doctor's last-request facts are kept on purpose), in
        the server's temp and cache folders, and in the system's temp folder (where a child
        without TEMP writes)."""
        runtime = [p.name for p in self.runtime.iterdir() if p.name != METRICS_FILE] if self.runtime.exists() else []
        system_temp = Path(os.environ["SYSTEMROOT"]) / "Temp"
        try:
            shared = [f"SystemRoot/Temp/{p.relative_to(system_temp)}" for p in system_temp.rglob("*")]
        except PermissionError:  # a real Windows account without administrator rights cannot list it
            shared = []
        caches = self.home / "AppData" / "Local"  # less hostlink's own cache (the CLI's facts), kept on purpose
        return sorted(runtime + [f"TEMP/{p.name}" for p in self.temp.iterdir()] + shared
                      + [f"LOCALAPPDATA/{p.relative_to(caches)}" for p in caches.rglob("*")
                         if p.relative_to(caches).parts[0] != "hostlink"])

    def private_leftovers(self) -> list[str]:
        """What requests left: private files beyond the server's own (taken once it was idle)."""
        return [name for name in self.private_files() if name not in self.own_files]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()  # TerminateProcess: Windows has no gentle stop for a console-less child
        self.process.wait(60)
        for stream in (self.process.stdout, self.process.stderr):
            stream.close()


def post(server: WindowsServe, path: str, body: dict) -> tuple[int, dict]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=REQUEST_SECONDS)
    try:
        connection.request("POST", path, json.dumps(body), {"Authorization": f"Bearer {KEY}",
                                                           "content-type": "application/json"})
        answer = connection.getresponse()
        return answer.status, json.loads(answer.read())
    finally:
        connection.close()


def read_until(connection: socket.socket, marker: bytes) -> bytes:
    received = b""
    while marker not in received:
        chunk = connection.recv(65536)
        assert chunk, received
        received += chunk
    return received


def streamed_request(server: WindowsServe) -> socket.socket:
    """A streamed Messages request written by hand, read up to the first text; the caller cuts it."""
    body = json.dumps({"model": "sonnet", "max_tokens": 64, "stream": True,
                       "messages": [{"role": "user", "content": "Go"}]}).encode()
    connection = socket.create_connection(("127.0.0.1", server.port), timeout=REQUEST_SECONDS)
    connection.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nx-api-key: %s\r\n"
                       b"content-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                       % (server.port, KEY.encode(), len(body), body))
    try:
        assert read_until(connection, b"text_delta").startswith(b"HTTP/1.1 200")
    except BaseException:
        connection.close()
        raise
    return connection


@pytest.fixture(scope="module")
def api():
    with fa.FakeAnthropic() as fake:
        yield fake


@pytest.fixture(scope="module")
def server(api, tmp_path_factory):
    path = os.environ.get("HOSTLINK_WINDOWS_CLAUDE")
    if not path or not Path(path).is_file():
        pytest.skip("claude.exe is not installed: run scripts/test-windows")
    served = WindowsServe(tmp_path_factory.mktemp("serve"), api, Path(path))
    try:
        served.wait_idle(START_SECONDS)  # the start-up check (claude --version, auth status, the bridge) is done
        served.own_files = served.private_files()
        yield served
    finally:
        served.stop()


@pytest.fixture
def script(api, server):
    """An empty script for each test, and nothing left running below the server after it."""
    while not api.script.empty():
        api.script.get_nowait()
    yield api
    server.wait_idle()


def test_the_banner_is_powershell(server):
    assert server.banner[1:] == [f'$env:ANTHROPIC_BASE_URL = "{server.base_url}"',
                                 "$env:ANTHROPIC_API_KEY = $env:SERVE_TEST_KEY",
                                 f'$env:OPENAI_BASE_URL = "{server.base_url}/v1"',
                                 "$env:OPENAI_API_KEY = $env:SERVE_TEST_KEY"]


def test_a_text_request_answers_and_leaves_no_private_state(server, script):
    script.push(fa.text("hello from claude.exe"))
    status, answer = post(server, "/v1/chat/completions",
                          {"model": "sonnet", "messages": [{"role": "user", "content": "Say hello"}]})
    assert status == 200, answer
    assert answer["choices"][0]["message"]["content"] == "hello from claude.exe"
    assert answer["choices"][0]["finish_reason"] == "stop"
    assert "Say hello" in json.dumps(script.messages_requests()[-1]["messages"])
    server.wait_clean()


def test_a_tool_proposal_comes_back_as_tool_calls(server, script):
    """Then the client's follow-up with the tool's result takes the child prewarmed for it, and
    nothing is left once that answers."""
    script.push(fa.tool_use(TOOL_PREFIX + "get_weather", {"city": "Rome"}), fa.text("Sunny in Rome."))
    messages = [{"role": "user", "content": "Weather in Rome?"}]
    status, answer = post(server, "/v1/chat/completions", {"model": "sonnet", "tools": [WEATHER], "messages": messages})
    assert status == 200, answer
    choice = answer["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    [call] = choice["message"]["tool_calls"]
    assert call["type"] == "function" and call["function"]["name"] == "get_weather"
    assert json.loads(call["function"]["arguments"]) == {"city": "Rome"}
    messages += [choice["message"], {"role": "tool", "tool_call_id": call["id"], "content": "sunny-rome-4711"}]
    status, answer = post(server, "/v1/chat/completions", {"model": "sonnet", "tools": [WEATHER], "messages": messages})
    assert status == 200, answer
    assert answer["choices"][0]["message"]["content"] == "Sunny in Rome."
    assert "sunny-rome-4711" in json.dumps(script.messages_requests()[-1]["messages"])
    server.wait_clean()


def test_a_request_cut_by_its_client_leaves_no_claude(server, script):
    script.push(fa.Reply((fa.Text("Started answering, then a long pause."),), delay_before_delta=60))
    with streamed_request(server):
        below = server.claude_children()
        assert "claude.exe" in below.values(), below
    try:
        wait_until(lambda: not [pid for pid in below if running(pid)], GONE_SECONDS,
                   f"left running after the client cut its request: {below}")
    finally:
        end_leftovers(below)
    server.wait_clean()


def test_a_server_killed_hard_mid_request_leaves_no_claude(api, claude_exe, tmp_path):
    served = WindowsServe(tmp_path, api, claude_exe)
    below: dict[int, str] = {}
    try:
        served.wait_idle(START_SECONDS)
        api.push(fa.Reply((fa.Text("Working on it."),), delay_before_delta=60))
        with streamed_request(served):
            below = served.claude_children()
            assert "claude.exe" in below.values(), below
            served.process.kill()  # TerminateProcess: no cleanup of its own runs
            served.process.wait(60)
            wait_until(lambda: not [pid for pid in below if running(pid)], GONE_SECONDS,
                       f"left running after hostlink serve was killed: {below}")
    finally:
        served.stop()
        end_leftovers(below)
