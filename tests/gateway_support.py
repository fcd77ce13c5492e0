"""Running `hostlink mcp serve` as the MCP hosts do (a child process), with a config of
the given servers in a throwaway HOME, and checking that nothing it started outlives it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import asynccontextmanager, contextmanager, redirect_stderr
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hostlink.gateway.server import Face

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fakes" / "mcp_fixture_server.py"
EVERYTHING = ROOT / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
NODE = shutil.which("node")
HOSTLINK = str(Path(sys.executable).parent / "hostlink")
POOLED = ("asyncio_", "AnyIO worker thread")  # the event loop's worker threads: they idle out, or end with the loop


def fixture(*args: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(FIXTURE), *args]}


def demo() -> dict[str, Any]:
    return {"command": sys.executable, "args": ["-m", "hostlink.demo"]}


def everything() -> dict[str, Any]:
    return {"command": NODE or "node", "args": [str(EVERYTHING), "stdio"]}


def gateway_env(tmp_path: Path, servers: dict[str, Any]) -> dict[str, str]:
    """Environment for a gateway whose user config holds `servers`."""
    config = tmp_path / "config" / "mcp"
    config.mkdir(parents=True, exist_ok=True)
    (config / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    (tmp_path / "home").mkdir(exist_ok=True)
    environ = {key: value for key, value in os.environ.items() if key != "HOSTLINK_TRUST_PROJECT"}
    environ.update(XDG_CONFIG_HOME=str(tmp_path / "config"), HOME=str(tmp_path / "home"),
                   HOSTLINK_RUNTIME_DIR=str(tmp_path / "runtime"))
    return environ


@asynccontextmanager
async def stdio_gateway(tmp_path: Path, servers: dict[str, Any], *args: str, errlog: Any = None, **client: Any):
    """An SDK client connected to `hostlink mcp serve ARGS` over stdio (its stderr to `errlog`)."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=HOSTLINK, args=["mcp", "serve", *args],
                                   env=gateway_env(tmp_path, servers), cwd=str(tmp_path))
    async with Client(stdio_client(params, errlog=errlog or sys.stderr), **client) as session:
        yield session


@asynccontextmanager
async def gateway_in_process(tmp_path: Path, servers: dict[str, Any], face: Face = "proxy", *, errlog: Any = None,
                             **client: Any):
    """An SDK client on the gateway of `hostlink mcp serve --expose FACE` run in this process
    over the SDK's memory streams: the server, configuration (the environment of `gateway_env`,
    set for the while) and shutdown of the stdio mode, without a process of its own (each costs
    about 2 s of CPU). For what the gateway does; its stdio, signals and process stay with
    `stdio_gateway`. Its notices go to `errlog`. On the way out no process with its HOME, no
    private file and no thread it started is left."""
    import anyio
    import pytest
    from mcp import Client
    from mcp.shared.memory import create_client_server_memory_streams

    from hostlink.gateway.server import Gateway

    environ = gateway_env(tmp_path, servers)
    threads = set(threading.enumerate())

    @asynccontextmanager
    async def connected(gateway: Gateway, server: Any):
        """The host's ends of a connection the gateway serves; closing them ends it, as stdin closing does."""
        async with create_client_server_memory_streams() as ((read, write), (served_read, served_write)):
            done = anyio.Event()

            async def serve() -> None:
                try:
                    await gateway.serve(server, served_read, served_write)
                finally:
                    done.set()

            async with anyio.create_task_group() as group:
                group.start_soon(serve)
                try:
                    yield read, write
                finally:
                    await write.aclose()
                    with anyio.fail_after(30):
                        await done.wait()

    with pytest.MonkeyPatch.context() as patch, redirect_stderr(errlog or sys.stderr):
        for key in set(os.environ) - set(environ):
            patch.delenv(key)
        for key, value in environ.items():
            patch.setenv(key, value)
        gateway = Gateway(face)
        server = gateway.server()
        try:
            await gateway.start(tmp_path, environ, trust_flag=False)
            async with Client(connected(gateway, server), **client) as session:
                yield session
        finally:
            with anyio.CancelScope(shield=True):
                await gateway.host.shutdown()
    assert live_mentioning(str(tmp_path / "home")) == [] and leftovers(tmp_path) == []  # its servers and files
    for thread in set(threading.enumerate()) - threads:
        if not thread.name.startswith(POOLED):
            thread.join(10)
            assert not thread.is_alive(), f"the gateway left thread {thread.name} running"


@dataclass
class HttpGateway:
    url: str
    key: str
    proc: Any
    stderr: Path  # what the gateway wrote on stderr (a file: a pipe nobody reads would stall it)

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


@contextmanager
def http_gateway(tmp_path: Path, servers: dict[str, Any], *args: str) -> Iterator[HttpGateway]:
    """`hostlink mcp serve --http --port 0 ARGS` with a config of `servers`; stopped by SIGTERM
    on the way out, with no traceback on its stderr and nothing of it left running."""
    from process_support import started

    tmp_path.mkdir(parents=True, exist_ok=True)
    stderr = tmp_path / "gateway-stderr.txt"
    with stderr.open("wb") as err, started([HOSTLINK, "mcp", "serve", "--http", "--port", "0", *args],
                                           stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL,
                                           env=gateway_env(tmp_path, servers), cwd=tmp_path) as proc:
        first = proc.stdout.readline().decode()
        assert first, stderr.read_text()[-3000:]
        key_file = Path(proc.stdout.readline().decode().split("$(cat ", 1)[1].rstrip(")\n"))
        try:
            yield HttpGateway(first.rsplit(" ", 1)[1].strip(), key_file.read_text(), proc, stderr)
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=30) == 128 + signal.SIGTERM
    assert b"Traceback" not in stderr.read_bytes()
    assert live_mentioning(str(tmp_path)) == [] and leftovers(tmp_path) == []


@asynccontextmanager
async def http_host(gateway: HttpGateway, event_hooks: dict | None = None, **client: Any):
    """An SDK client as an MCP host on the gateway, on the handshake era (where list changes,
    subscriptions and server requests are), with room for servers that start slowly;
    `event_hooks` are its HTTP client's (to see its requests and the answers' headers)."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with (httpx2.AsyncClient(headers=gateway.headers, timeout=60, event_hooks=event_hooks) as http,
                Client(streamable_http_client(gateway.url, http_client=http), mode="legacy", **client) as host):
        yield host


def live_mentioning(text: str) -> list[int]:
    """Pids of live processes (not this one) whose command line, environment or working
    directory mentions `text`: a test's gateway and the servers it started (they run in, or
    inherit HOME and the config directory from, the test's `tmp_path`)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                stat = Path(f"/proc/{entry}/stat").read_bytes()
                seen = [Path(f"/proc/{entry}/cmdline").read_bytes(), Path(f"/proc/{entry}/environ").read_bytes(),
                        os.readlink(f"/proc/{entry}/cwd").encode()]
            except OSError:
                continue
            if stat.rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X") and any(text.encode() in part for part in seen):
                found.append(int(entry))
    return found


def leftovers(tmp_path: Path) -> list[str]:
    runtime = tmp_path / "runtime"
    return sorted(p.name for p in runtime.iterdir()) if runtime.exists() else []
