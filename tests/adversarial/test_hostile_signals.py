"""SIGTERM and SIGHUP while a call hangs: every host stops its servers and removes its files.

Before: `hostlink mcp call` or the llm host, terminated while a call hung, left the server
running (re-parented to init) and its overflow file behind. Here pytest is a child subreaper,
so a server left behind would become pytest's child, which `fixture_children` sees.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcp_runtime_support import FIXTURE, fixture_children

LLM_HOST = """
import sys
from hostlink.adapters.llm.llm_host import LlmHost
from hostlink.mcp.extension import McpExtension
from hostlink.mcp.config.schema import StdioServer

host = LlmHost([McpExtension(servers={"fx": StdioServer(command=sys.executable, args=[sys.argv[1]])})])
(tool,) = [t for t in host.tools() if t.name == "mcp"]
tool.implementation(action="call", server="fx", tool="big", args={"n_bytes": 5_000_000})
print("overflow kept", flush=True)
try:
    tool.implementation(action="call", server="fx", tool="hang", args={})
except KeyboardInterrupt:  # what llm's click does with it: "Aborted!", exit 1
    print("Aborted!", file=sys.stderr)
    sys.exit(1)
"""


def _server_under(parent: int, timeout: float = 30) -> int:
    """The pid of the fixture server that `parent` started."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for entry in os.listdir("/proc"):
            try:
                if (entry.isdigit()
                        and Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1] == str(parent)
                        and FIXTURE in Path(f"/proc/{entry}/cmdline").read_text()):
                    return int(entry)
            except OSError:
                continue
        time.sleep(0.05)
    raise AssertionError("the host did not start the server")


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_the_cli_stops_its_server_when_terminated_mid_call(tmp_path, signum):
    config = tmp_path / "config" / "mcp"
    config.mkdir(parents=True)
    (config / "mcp.json").write_text(json.dumps({"mcpServers": {"fx": {"command": sys.executable, "args": [FIXTURE]}}}))
    environ = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config"), "HOME": str(tmp_path),
               "HOSTLINK_RUNTIME_DIR": str(tmp_path / "runtime")}
    proc = subprocess.Popen([sys.executable, "-c", "from hostlink.cli import main; main()",
                             "mcp", "call", "fx", "hang"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environ, cwd=tmp_path)
    server = _server_under(proc.pid)
    time.sleep(1.0)  # the call is in flight
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signum
    assert stderr.decode().strip() == (f"hostlink mcp: stopped by {signal.Signals(signum).name}; "
                                       "every server it started was stopped")
    assert _gone(server) and fixture_children() == []
    runtime = tmp_path / "runtime"
    assert not runtime.exists() or list(runtime.iterdir()) == []


def test_the_llm_host_stops_its_server_and_removes_its_files_when_terminated(tmp_path):
    runtime = tmp_path / "runtime"
    environ = {**os.environ, "HOSTLINK_RUNTIME_DIR": str(runtime), "HOME": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-c", LLM_HOST, FIXTURE], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=environ, cwd=tmp_path, text=True)
    server = _server_under(proc.pid)
    assert proc.stdout.readline() == "overflow kept\n"
    assert sum(f.stat().st_size for f in runtime.rglob("overflow-*")) == 5_000_000
    time.sleep(1.0)  # the hanging call is in flight
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=30)
    assert (proc.returncode, stderr) == (1, "Aborted!\n")
    assert _gone(server) and fixture_children() == []
    assert list(runtime.iterdir()) == []
