"""The real-servers lane (tests/real_servers/): MCP servers nobody here wrote, pinned and
installed by `scripts/setup-test` (npm: package.json; PyPI: `.venv-servers/`), each running
offline against files, a git repository and a web page of the test's own on 127.0.0.1.

A module shares one `Lane`: one HOME and configuration with every server in it (each added with
`hostlink mcp add-json`), one page server, one server-everything over Streamable HTTP. Nothing
is skipped: a missing server fails the lane, in CI as on a laptop (run `scripts/setup-test`).
"""

from __future__ import annotations

import base64
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from gateway_support import live_mentioning
from process_support import started

ROOT = Path(__file__).resolve().parents[1]
NODE_MODULES = ROOT / "node_modules"
SERVERS_VENV = ROOT / ".venv-servers" / "bin"  # the PyPI servers, apart from hostlink's own SDK
LOOPBACK_LISTEN = ROOT / "tests" / "fakes" / "loopback_listen.cjs"
NODE = shutil.which("node") or "node"
SETUP_MS = 120_000
# fetch's HTML extraction (readabilipy) runs `npm install` on its first use when node is on PATH: a
# download at run time. Without node it extracts in pure Python, offline.
WITHOUT_NODE = {"PATH": str(SERVERS_VENV)}
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

PAGE_TITLE = "Lane page"
PAGE_TEXT = "Hello from the lane, served on loopback."
PAGES = {"/page.html": ("text/html", f"<html><head><title>{PAGE_TITLE}</title></head>"
                                     f"<body><h1>Lane</h1><p>{PAGE_TEXT}</p></body></html>"),
         "/robots.txt": ("text/plain", "User-agent: *\nDisallow: /\n")}
FETCH_AGENT = "hostlink-lane-fetch/1"
ROBOTS_AGENT = "hostlink-lane-robots/1"
HELLO = "hello from fs\n"
BIG_LINE = "x" * 51 + "\n"  # 800 of them: the 41,600-byte file
COMMIT = "lane commit: a repository of the test's own"
PNG = base64.b64decode(  # a 1x4 RGB PNG
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAAECAIAAADAusJtAAAAEklEQVR4nGNgAAFGIGYCYmYGAAAsAAcMe6v7AAAAAElFTkSuQmCC")
NPM_SERVERS = {
    "fs": "@modelcontextprotocol/server-filesystem/dist/index.js",
    "memory": "@modelcontextprotocol/server-memory/dist/index.js",
    "thinking": "@modelcontextprotocol/server-sequential-thinking/dist/index.js",
    "everything": "@modelcontextprotocol/server-everything/dist/index.js",
    "playwright": "@playwright/mcp/cli.js",
}
PYPI_SERVERS = ("mcp-server-git", "mcp-server-time", "mcp-server-fetch")
# What branch i37-results fixes (issue 37 item 1 and its rough edges); the lead drops the marks on merging it.


class _Site(http.server.BaseHTTPRequestHandler):
    """The page the browser and the fetch server get, and a robots.txt that forbids it;
    every request is recorded (path, User-Agent)."""

    def do_GET(self) -> None:
        self.server.seen.append((self.path, self.headers.get("User-Agent", "")))  # type: ignore[attr-defined]
        kind, body = PAGES.get(self.path, ("text/plain", "not here"))
        data = body.encode()
        self.send_response(200 if self.path in PAGES else 404)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@dataclass
class Run:
    """One finished `hostlink` command and the processes of its directory still alive after it."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    left: list[int]
    seconds: float


@dataclass
class Lane:
    root: Path
    env: dict[str, str]
    servers: dict[str, Any]
    page: str  # the page's URL
    seen: list[tuple[str, str]]  # the page server's requests: (path, User-Agent)
    runs: dict[tuple[str, ...], Future[Run]] = field(default_factory=dict)
    _count: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def cli(self, *argv: str) -> Run:
        """`hostlink ARGV` once (the same ARGV again, from any thread, answers that run), in a
        working directory of its own: whatever still runs there afterwards (a server, a
        browser) was left behind."""
        with self._lock:
            pending, mine = self.runs.get(argv), False
            if pending is None:
                pending, mine = self.runs.setdefault(argv, Future()), True
                self._count += 1
                where = self.root / "runs" / f"r{self._count:03d}"
        if mine:
            try:
                pending.set_result(self._run(argv, where))
            except Exception as error:  # noqa: BLE001 - every waiter on this run gets it
                pending.set_exception(error)
        return pending.result()

    def _run(self, argv: tuple[str, ...], where: Path) -> Run:
        where.mkdir(parents=True)
        began = time.monotonic()
        done = subprocess.run([sys.executable, "-c", "from hostlink.cli import main; main()", *argv],
                              capture_output=True, text=True, env=self.env, cwd=where, timeout=180)
        return Run(argv, done.returncode, done.stdout, done.stderr, live_mentioning(str(where)),
                   time.monotonic() - began)

    def requests(self, agent: str) -> list[str]:
        return [path for path, seen_agent in self.seen if seen_agent == agent]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _missing() -> list[str]:
    missing = [str(NODE_MODULES / path) for path in NPM_SERVERS.values() if not (NODE_MODULES / path).is_file()]
    missing += [str(SERVERS_VENV / name) for name in PYPI_SERVERS if not (SERVERS_VENV / name).is_file()]
    return missing + ([] if Path(CHROMIUM).is_file() else [CHROMIUM])


def lane_in(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lane]:
    """A module's lane, the servers' files made and its two loopback servers running."""
    missing = _missing()
    assert not missing, f"the real-servers lane needs scripts/setup-test; missing: {missing}"
    root = tmp_path_factory.mktemp("lane")
    (root / "fs").mkdir()
    (root / "fs" / "hello.txt").write_text(HELLO)
    (root / "fs" / "big.txt").write_text(BIG_LINE * 800)
    (root / "fs" / "pixel.png").write_bytes(PNG)
    repo = root / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=lane", "-c", "user.email=lane@example.invalid",
                    "commit", "-q", "--allow-empty", "-m", COMMIT], check=True)
    site = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    site.seen = []  # type: ignore[attr-defined]
    serving = threading.Thread(target=site.serve_forever, daemon=True)
    serving.start()
    port = _free_port()
    node = {name: {"command": NODE, "args": [str(NODE_MODULES / path)]} for name, path in NPM_SERVERS.items()}
    servers = {
        "fs": {**node["fs"], "args": [*node["fs"]["args"], str(root / "fs")]},
        "memory": {**node["memory"], "env": {"MEMORY_FILE_PATH": str(root / "memory.jsonl")}},
        "thinking": {**node["thinking"], "env": {"DISABLE_THOUGHT_LOGGING": "true"}},
        "everything": {**node["everything"], "args": [*node["everything"]["args"], "stdio"]},
        "everything-http": {"url": f"http://127.0.0.1:{port}/mcp"},
        "playwright": {**node["playwright"], "args": [*node["playwright"]["args"], "--headless", "--isolated",
                                                      "--no-sandbox", "--executable-path", CHROMIUM,
                                                      "--output-dir", str(root / "playwright")]},
        "git": {"command": str(SERVERS_VENV / "mcp-server-git"), "args": ["--repository", str(repo)]},
        "time": {"command": str(SERVERS_VENV / "mcp-server-time"), "args": ["--local-timezone", "UTC"]},
        "fetch": {"command": str(SERVERS_VENV / "mcp-server-fetch"), "env": WITHOUT_NODE,
                  "args": ["--ignore-robots-txt", "--allow-private-ips", "--user-agent", FETCH_AGENT]},
        "fetch-robots": {"command": str(SERVERS_VENV / "mcp-server-fetch"), "env": WITHOUT_NODE,
                         "args": ["--allow-private-ips", "--user-agent", ROBOTS_AGENT]},
    }
    for entry in servers.values():  # a loaded machine starts a server slowly; the lane tests answers, not speed
        entry["requestTimeoutMs"] = SETUP_MS
    env = {key: value for key, value in os.environ.items() if key not in ("HOSTLINK_TRUST_PROJECT", "GITHUB_TOKEN")}
    env.update(XDG_CONFIG_HOME=str(root / "config"), HOME=str(root), HOSTLINK_RUNTIME_DIR=str(root / "runtime"))
    for name, entry in servers.items():  # added as a person adds them
        added = subprocess.run([sys.executable, "-c", "from hostlink.cli import main; main()", "mcp", "add-json",
                                name, json.dumps(entry)], capture_output=True, text=True, env=env, cwd=root,
                               timeout=120)
        assert added.returncode == 0, added.stderr
    everything_http = [NODE, "--require", str(LOOPBACK_LISTEN), str(NODE_MODULES / NPM_SERVERS["everything"]),
                       "streamableHttp"]
    log = root / "everything-http.log"
    try:
        with log.open("w") as sink, started(everything_http, env={**os.environ, "PORT": str(port)}, cwd=ROOT,
                                            stdout=sink, stderr=sink):
            deadline = time.monotonic() + 60
            while "listening" not in log.read_text():  # the server says when it listens
                assert time.monotonic() < deadline, f"server-everything over HTTP did not start: {log.read_text()}"
                time.sleep(0.1)
            yield Lane(root, env, servers, f"http://127.0.0.1:{site.server_address[1]}/page.html",
                       site.seen)  # type: ignore[attr-defined]
    finally:
        site.shutdown()
        site.server_close()
