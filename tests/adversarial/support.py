"""Running the real `hostlink` CLI against hostile peers, and the rules every run must keep.

`run_cli` writes the given servers into a fresh user config, runs `hostlink ARGV` in a
child process and returns what it did, with the child's own peak memory (`peak_rss.py`).
`assert_contained` is the standing check: no control byte but newline and tab on either
stream, no Python traceback, at most `max_bytes` printed, peak memory bounded, and no
private file left in the runtime directory. `untouched_url` is a URL nothing may request.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).parent
HOSTILE_STDIO = str(HERE / "hostile_stdio.py")
PEAK_RSS = HERE / "peak_rss.py"  # the command's own peak, not pytest's high-water mark (see there)
CONTROL = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")
PEAK_RSS_MIB = 400


@dataclass
class Run:
    code: int
    stdout: bytes
    stderr: bytes
    peak_mib: float
    runtime: Path

    @property
    def err(self) -> str:
        return self.stderr.decode("utf-8", "replace")

    @property
    def out(self) -> str:
        return self.stdout.decode("utf-8", "replace")


def stdio(attack: str, *args: str, **fields) -> dict:
    return {"command": sys.executable, "args": [HOSTILE_STDIO, attack, *args], "protocolVersion": "legacy", **fields}


def run_cli(tmp_path: Path, servers: dict, *argv: str, timeout: float = 120) -> Run:
    config = tmp_path / "config" / "mcp"
    config.mkdir(parents=True, exist_ok=True)
    (config / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    environ = {key: value for key, value in os.environ.items() if key != "HOSTLINK_TRUST_PROJECT"}
    runtime = tmp_path / "runtime"
    environ.update(XDG_CONFIG_HOME=str(tmp_path / "config"), HOME=str(tmp_path), HOSTLINK_RUNTIME_DIR=str(runtime))
    out, err, report = tmp_path / "stdout", tmp_path / "stderr", tmp_path / "peak.json"
    command = [sys.executable, "-c", "from hostlink.cli import main; main()", *argv]
    with out.open("wb") as stdout, err.open("wb") as stderr:
        subprocess.run([sys.executable, str(PEAK_RSS), str(report), *command], stdout=stdout, stderr=stderr,
                       stdin=subprocess.DEVNULL, env=environ, cwd=tmp_path, check=True)
    measured = json.loads(report.read_text())
    report.unlink()
    return Run(os.waitstatus_to_exitcode(measured["status"]), out.read_bytes(), err.read_bytes(),
               measured["maxrss_kib"] / 1024, runtime)


def assert_contained(run: Run, *, max_bytes: int = 64 * 1024) -> None:
    for name, data in (("stdout", run.stdout), ("stderr", run.stderr)):
        assert CONTROL.search(data) is None, f"a control byte on {name}: {data[:300]!r}"
        assert b"Traceback" not in data, f"a traceback on {name}: {data[:2000]!r}"
        assert len(data) <= max_bytes, f"{len(data)} bytes on {name}"
    assert run.peak_mib < PEAK_RSS_MIB, f"peak RSS {run.peak_mib:.0f} MiB"
    left = sorted(p.name for p in run.runtime.iterdir()) if run.runtime.exists() else []
    assert left == [], f"private state left behind: {left}"


@contextmanager
def untouched_url(path: str = "/schema.json") -> Iterator[str]:
    """A URL on a listening 127.0.0.1 socket; the block fails if anything connected to it."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.setblocking(False)
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}{path}"
        try:
            listener.accept()
        except BlockingIOError:
            return  # nobody connected
        raise AssertionError("something connected to a URL nothing may request")
    finally:
        listener.close()
