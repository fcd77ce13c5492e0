"""Running `hostlink mcp serve` as the MCP hosts do (a child process), with a config of
the given servers in a throwaway HOME, and checking that nothing it started outlives it."""

from __future__ import annotations

import json
import os
import shutil
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fakes" / "mcp_fixture_server.py"
EVERYTHING = ROOT / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
NODE = shutil.which("node")
HOSTLINK = str(Path(sys.executable).parent / "hostlink")


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
