"""The background import of the MCP SDK: a lasting session with servers configured imports
the SDK's client modules at start, and starts no server and contacts nothing; one-shot
sessions and sessions without servers import nothing. Each case runs in a fresh interpreter,
since this one has imported the SDK long ago."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

SCRIPT = r"""
import asyncio, json, socket, sys, threading
from pathlib import Path
from hostlink.host.session import HostSession
from hostlink.mcp.extension import McpExtension
from hostlink.mcp.config.schema import HttpServer, StdioServer

marker, lasting, configured = sys.argv[1], sys.argv[2] == "lasting", sys.argv[3] == "servers"
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen()
listener.setblocking(False)
servers = {"local": StdioServer(command=sys.executable, args=["-c", f"open({marker!r}, 'w')"]),
           "web": HttpServer(url=f"http://127.0.0.1:{listener.getsockname()[1]}/mcp")} if configured else {}

class Quiet:
    def notify(self, message, level="info"):
        pass

async def main():
    before = "mcp" in sys.modules
    host = HostSession([McpExtension(servers=servers)], lasting=lasting)
    await host.start(cwd=Path.cwd(), project_trusted=False, notifier=Quiet())
    for thread in threading.enumerate():
        if thread.name == "hostlink-mcp-import":
            thread.join(60)
    await asyncio.sleep(0.3)  # a server started or a connection made would show by now
    try:
        listener.accept()
        contacted = True
    except BlockingIOError:
        contacted = False
    await host.shutdown()
    print(json.dumps({"before": before, "imported": sorted(m for m in ("mcp", "mcp.client.stdio",
                      "mcp.client.streamable_http") if m in sys.modules), "contacted": contacted,
                      "started": Path(marker).exists()}))

asyncio.run(main())
"""


def run_session(tmp_path, lasting: str, configured: str) -> dict:
    marker = tmp_path / "server-started"
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(marker), lasting, configured], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_a_lasting_session_imports_the_sdk_and_contacts_nothing(tmp_path):
    seen = run_session(tmp_path, "lasting", "servers")
    assert seen == {"before": False, "imported": ["mcp", "mcp.client.stdio", "mcp.client.streamable_http"],
                    "contacted": False, "started": False}


@pytest.mark.parametrize(("lasting", "configured"), [("one-shot", "servers"), ("lasting", "none")])
def test_one_shot_sessions_and_sessions_without_servers_import_nothing(tmp_path, lasting, configured):
    seen = run_session(tmp_path, lasting, configured)
    assert seen == {"before": False, "imported": [], "contacted": False, "started": False}


def test_an_sdk_that_fails_to_import_ends_the_background_import_quietly(monkeypatch, capfd):
    """A broken install is the first call's to report (it imports again): the thread says nothing."""
    from hostlink.mcp.runtime import prefetch

    monkeypatch.setattr(prefetch, "sdk_modules", lambda servers: ["hostlink_no_such_sdk_module", "json"])
    thread = prefetch.import_in_background({})
    assert thread is not None
    thread.join(30)
    assert not thread.is_alive() and capfd.readouterr().err == ""
