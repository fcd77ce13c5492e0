"""The hostile task answers both fixture task servers give (mcp_task_server.py, 2026-07-28, and
mcp_task_server_legacy.py, 2025-11-25), one table for the two shapes: what the n-th `tasks/get`
of a task says in MODE, in the 2026-07-28 field names (each server puts them in its own shape).

- `unknown-status` — the task is "paused", a status MCP does not define
- `other-id` — tasks/get answers for a task with another id ("task-other")
- `loud-message` — a 100,000-character statusMessage full of terminal escapes, then completed
- `poll-zero` / `poll-day` — pollIntervalMs 0 / 86,400,000; completed on the 4th tasks/get
- `get-hangs` — tasks/get is never answered (HANG)
- `forever` — the task is working until it is cancelled
- `dies` — the process exits during the first tasks/get
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

HANG = "hang"  # no answer
LOUD = "\x1b[31m\x1b]0;owned\x07" + "x" * 100_000


def hostile(mode: str, n: int) -> dict | str | None:
    """The n-th tasks/get answer's fields in a hostile MODE (HANG: none); None for any other mode."""
    if mode == "dies":
        sys.exit(3)
    if mode == "get-hangs":
        return HANG
    if mode == "forever":
        return {"status": "working"}
    if mode == "unknown-status":
        return {"status": "paused"}
    if mode == "other-id":
        return {"status": "working", "taskId": "task-other"}
    if mode == "loud-message":
        return {"status": "working", "statusMessage": LOUD} if n == 1 else {"status": "completed"}
    if mode in ("poll-zero", "poll-day"):
        interval = 0 if mode == "poll-zero" else 86_400_000
        return {"status": "working" if n < 4 else "completed", "pollIntervalMs": interval}
    return None


def write_counts(path: Path, seen: dict) -> None:
    """The requests seen so far, replaced whole: a test reading the file never sees half of it."""
    part = path.with_name(path.name + ".part")
    part.write_text(json.dumps(seen))
    os.replace(part, path)
