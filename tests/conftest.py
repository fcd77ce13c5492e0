"""Suite-wide fixtures, and the guard that tests stop every process they start.

The pytest process becomes a child subreaper, so whatever the tests start stays its
descendant even when orphaned. At the end of the run, a descendant still running one of
the programs the tests start (fixture servers, the demo server, the npm peers, the claude
CLI, the proposal server) is a leak: it is reported, killed, and the run fails.
"""

import ctypes
import os
import signal
from pathlib import Path

import pytest

_WATCHED = ("tests/fakes/", "tests/adversarial/", "serve_host.py", "hostlink.demo", "node_modules", "proposal_server",
            "claude")


_PR_SET_CHILD_SUBREAPER = 36


@pytest.fixture
def anyio_backend():
    """Async tests run on asyncio: the MCP runtime owns its connections in asyncio tasks."""
    return "asyncio"


@pytest.fixture
def runtime_dir(tmp_path, monkeypatch):
    """A fresh HOSTLINK_RUNTIME_DIR; the test fails if a private directory is left in it."""
    root = tmp_path / "runtime"
    monkeypatch.setenv("HOSTLINK_RUNTIME_DIR", str(root))
    yield root
    left = sorted(p.name for p in root.iterdir()) if root.exists() else []
    assert left == [], f"private state left behind: {left}"


def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every process that can be read."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                raw = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            found[int(entry)] = (parent, raw.replace(b"\0", b" ").decode("utf-8", "replace").strip())
    return found


def _descends_from(pid: int, ancestor: int, table: dict[int, tuple[int, str]]) -> bool:
    seen = set()
    while pid in table and pid not in seen:
        seen.add(pid)
        pid = table[pid][0]
        if pid == ancestor:
            return True
    return False


def pytest_sessionstart(session):
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def pytest_sessionfinish(session, exitstatus):
    table = _processes()
    me = os.getpid()
    leaked = {
        pid: cmd
        for pid, (_, cmd) in table.items()
        if _descends_from(pid, me, table) and any(mark in cmd for mark in _WATCHED)
    }
    if not leaked:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    for pid, cmd in sorted(leaked.items()):
        if reporter:
            reporter.write_line(f"LEAKED PROCESS {pid}: {cmd[:200]}", red=True)
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
