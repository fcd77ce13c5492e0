"""Helpers for the MCP runtime/tool tests: fixture server configs and process checks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hostlink.host import CancelSignal
from hostlink.host.session import HostSession
from hostlink.mcp.config.schema import parse_server
from hostlink.mcp.extension import McpExtension

FIXTURE = str(Path(__file__).parent / "fakes" / "mcp_fixture_server.py")
ASKER = str(Path(__file__).parent / "fakes" / "mcp_asking_server.py")  # tools that ask: forms, sampling, roots
DEMO_HTTP = str(Path(__file__).parent / "fakes" / "demo_http_server.py")  # hostlink's demo server over HTTP
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def stdio(*args: str, **fields: Any):
    """A StdioServer config running the SDK fixture server with `args`."""
    return parse_server({"command": sys.executable, "args": [FIXTURE, *args], **fields})


def fixture_children() -> list[int]:
    """Live (non-zombie) child processes of this process running the fixture server over stdio,
    as hostlink starts it; not an HTTP fixture server a test started itself (`HttpFixture`)."""
    return [pid for pid in live_children(FIXTURE) if b"\0--http\0" not in _cmdline(pid)]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""  # ended meanwhile


def live_children(mentioning: str = "") -> list[int]:
    """Live (non-zombie) child processes of this process whose command line holds `mentioning`."""
    me = str(os.getpid())
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            fields = stat.rsplit(")", 1)[1].split()
            if fields[1] != me or fields[0] == "Z":
                continue
            if mentioning in Path(f"/proc/{entry}/cmdline").read_bytes().decode(errors="replace"):
                found.append(int(entry))
        except (OSError, IndexError):
            continue
    return found


def alive(pid: int) -> bool:
    """Whether `pid` is a running (not zombie) process."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


class HttpFixture:
    """A fixture server (`script`, the SDK fixture server unless told) over Streamable HTTP on
    127.0.0.1, with its request counter."""

    def __init__(self, *args: str, env: dict[str, str] | None = None, script: str = FIXTURE) -> None:
        self.process = subprocess.Popen([sys.executable, script, "--http", *args], stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, text=True, env=env)
        self.url = self.process.stdout.readline().strip()
        assert self.url.startswith("http://127.0.0.1:"), "fixture did not print its URL"
        self.count()  # wait until it serves

    def count(self, path: str = "") -> int:
        """Requests received so far: all of them, or those to `path` (e.g. `/status/401/some-test/mcp`)."""
        query = "?" + urllib.parse.urlencode({"path": path}) if path else ""
        for _ in range(200):
            try:
                with _NO_PROXY.open(self.url.replace("/mcp", "/count") + query, timeout=5) as response:
                    return json.load(response)["count"]
            except OSError:
                time.sleep(0.05)
        raise AssertionError("fixture HTTP server never answered")

    def at(self, path: str) -> str:
        """The URL of `path` on this server (e.g. `/status/401/some-test/mcp`, answered 401)."""
        return self.url.replace("/mcp", path)

    def config(self, path: str = "/mcp", **fields: Any):
        return parse_server({"url": self.at(path), **fields})

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(10)
        self.process.stdout.close()


@contextmanager
def http_fixture(*args: str, env: dict[str, str] | None = None, script: str = FIXTURE) -> Iterator[HttpFixture]:
    server = HttpFixture(*args, env=env, script=script)
    try:
        yield server
    finally:
        server.close()


class Notes:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def notify(self, message: str, level: str = "info") -> None:
        self.seen.append((level, message))


class Host:
    """A real host session over one extension, with its `mcp` tool at hand."""

    def __init__(self, extension: McpExtension, tmp_path: Path, trusted: bool = False) -> None:
        self.extension = extension
        self.session = HostSession([extension])
        self.registry = self.session.registry
        self.tool = self.registry.tools["mcp"]
        self.notes = Notes()
        self._cwd, self._trusted = tmp_path, trusted

    async def __aenter__(self) -> Host:
        await self.session.start(cwd=self._cwd, project_trusted=self._trusted, notifier=self.notes)
        return self

    async def __aexit__(self, *exc) -> None:
        await self.session.shutdown()

    async def run(self, **args):
        return await self.session.run_tool("mcp", args, CancelSignal())


def text(result) -> str:
    return "\n".join(item.text for item in result.content if item.type == "text")
