"""Run a third-party program that phones home where only one loopback port is reachable: a
network namespace of its own (`unshare -n`), bridged to that port through a Unix socket
(`tests/fakes/loopback_netns.py`). No packet it sends can leave the machine."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from process_support import started

BRIDGE = Path(__file__).parent / "fakes" / "loopback_netns.py"
AVAILABLE = shutil.which("unshare") is not None and shutil.which("ip") is not None


@contextmanager
def only_loopback_port(port: int | str) -> Iterator[list[str]]:
    """The command prefix that runs a program in its own namespace, `127.0.0.1:port` there
    reaching the same port here."""
    with tempfile.TemporaryDirectory(prefix="hostlink-bridge-") as folder:
        socket_path = str(Path(folder) / "bridge.sock")
        with started([sys.executable, str(BRIDGE), "outer", socket_path, str(port)], stdout=subprocess.PIPE,
                     text=True) as outer:
            assert outer.stdout is not None and outer.stdout.readline().strip() == "ready"
            yield ["unshare", "-n", sys.executable, str(BRIDGE), "inner", str(port), socket_path, "--"]
