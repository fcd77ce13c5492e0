"""Shared by the serve tests (no tests here): the fake API upstream, `hostlink serve` as a
real process on an ephemeral 127.0.0.1 port, and the leak checks."""

from __future__ import annotations

import contextlib
import os
import queue
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from claude_transport_support import live_processes_mentioning, records
from hostlink.claude_code import metrics
from peers import CLAUDE_BIN

FAKES = Path(__file__).parent / "fakes"
sys.path.insert(0, str(FAKES))
import fake_anthropic as fa  # noqa: E402

KEY = "serve-test-key-0123456789"
HOST_SCRIPT = Path(__file__).with_name("serve_host.py")
TOOL_PREFIX = "mcp__hostlink__"  # how Claude names a client tool (the proposal server's catalog)
# The README's Codex provider (config.toml): written by the Codex test, compared with the docs' block.
CODEX_CONFIG = """model = "sonnet"
model_provider = "hostlink"

[model_providers.hostlink]
name = "hostlink serve"
base_url = "{base_url}/v1"
env_key = "HOSTLINK_KEY"
wire_api = "responses"
"""
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
WEATHER_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


class ServeProcess:
    """`hostlink serve` (through tests/serve_host.py) with its own HOME and runtime dir.

    Its stderr goes to a file (`stderr_bytes()` counts it while it runs); `nofile` lowers
    its descriptor limit (`ulimit -n`); `path` replaces its PATH; `claude_bin` is the
    folder its `claude` comes from."""

    def __init__(self, root: Path, api: fa.FakeAnthropic, *args: str, path: str | None = None,
                 nofile: int | None = None, claude_bin: Path = CLAUDE_BIN) -> None:
        self.root = root
        self.runtime = root / "runtime"
        self.home = home = root / "home"
        self.stderr_path = root / "stderr"
        home.mkdir(parents=True, exist_ok=True)
        env = {key: value for key, value in os.environ.items() if not key.startswith(("ANTHROPIC_", "OPENAI_"))}
        env.update(PATH=path or f"{claude_bin}:{Path(sys.executable).parent}:/usr/bin:/bin", HOME=str(home),
                   HOSTLINK_RUNTIME_DIR=str(self.runtime), SERVE_TEST_KEY=KEY)
        limit = None if nofile is None else (lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile)))
        with self.stderr_path.open("wb") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, str(HOST_SCRIPT), api.base_url, "--token-env", "SERVE_TEST_KEY", *args],
                cwd=home, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr, text=True,
                preexec_fn=limit)
        self._lines: queue.Queue[str] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.banner = [self._line(60) for _ in range(5)]
        self.base_url = self.banner[0].split("listening on ")[1].split(" ")[0]
        self.port = int(self.base_url.rsplit(":", 1)[1])

    def _line(self, timeout: float) -> str:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            line = ""
        if not line:
            self.process.kill()
            self.process.wait()
            self._reader.join(10)  # it reads until the killed process's stdout ends
            self.process.stdout.close()
            raise AssertionError(f"hostlink serve did not start: {self.stderr()[-2000:]}")
        return line.rstrip("\n")

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put("")

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def stderr_bytes(self) -> int:
        return self.stderr_path.stat().st_size

    def claude_pids(self) -> list[int]:
        """The live claude children (and proposal servers) of this server's requests; not the
        proposal server of the start-up check, which runs beside the first requests (a loaded
        machine once had it still running when a test counted the requests' children)."""
        return live_processes_mentioning(str(self.runtime), unless=f"{self.runtime}/claude-doctor-")

    def wait_for_claude(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not self.claude_pids():
            assert time.monotonic() < deadline, "no claude started"
            time.sleep(0.05)

    def wait_no_claude(self, timeout: float = 15) -> None:
        deadline = time.monotonic() + timeout
        while self.claude_pids():
            assert time.monotonic() < deadline, f"claude still running: {self.claude_pids()}"
            time.sleep(0.05)

    def stop(self, signum: int = signal.SIGTERM) -> tuple[int, str]:
        if self.process.poll() is None:
            self.process.send_signal(signum)
        try:
            self.process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.communicate()
        return self.process.returncode, self.stderr()

    def leftovers(self) -> tuple[list[int], list[str]]:
        """Processes and runtime files left (the doctor's last-request facts are kept on purpose)."""
        files = sorted(p.name for p in self.runtime.iterdir()) if self.runtime.exists() else []
        return live_processes_mentioning(str(self.root)), [f for f in files if f != metrics.FILE_NAME]




def tool_results(request: dict) -> list[dict]:
    return [record for record in records(request) if record.get("type") == "toolResult"]


def api_images(request: dict) -> list[dict]:
    return [block for m in request["messages"] if isinstance(m["content"], list) for block in m["content"]
            if block.get("type") == "image"]


@contextlib.contextmanager
def raw_post(server: ServeProcess, path: str, body: bytes, *, bearer: bool = False) -> Iterator[socket.socket]:
    """A keyed POST written by hand; leaving the block closes the socket: a client that disconnects."""
    key = b"Authorization: Bearer %s" if bearer else b"x-api-key: %s"
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as connection:
        connection.sendall(b"POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % (path.encode(), server.port)
                           + key % KEY.encode()
                           + b"\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body) + body)
        yield connection


def read_until(connection: socket.socket, marker: bytes) -> bytes:
    """What the server sent up to and including `marker` (fails if it closes first)."""
    received = b""
    while marker not in received:
        chunk = connection.recv(65536)
        assert chunk, received
        received += chunk
    return received


def start_server(api: fa.FakeAnthropic, tmp_path_factory, *args: str, nofile: int | None = None):
    """A module's server: yields it, then stops it and checks that nothing is left."""
    served = ServeProcess(tmp_path_factory.mktemp("serve"), api, *args, nofile=nofile)
    yield served
    served.stop()
    assert served.leftovers() == ([], []), (served.leftovers(), served.stderr()[-3000:])
