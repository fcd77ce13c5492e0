"""Run a command and report its own peak memory: `peak_rss.py REPORT COMMAND...`.

Linux keeps a process's peak RSS across `exec`, and a child that pytest spawns (by vfork or
fork) starts from pytest's own high-water mark, which earlier tests raise. Spawned from this
small process instead, the command's `wait4` figure is its own. REPORT gets
`{"status": <wait status>, "maxrss_kib": <peak>}`; this exits as the command did.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys


def main(report: str, command: list[str]) -> int:
    process = subprocess.Popen(command)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)  # reaped by wait4
    with open(report, "w") as file:
        json.dump({"status": status, "maxrss_kib": usage.ru_maxrss}, file)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
