"""A hand-written stdio MCP server (2025-11-25 only) that speaks tasks in that protocol's shape:
it declares `capabilities.tasks.requests.tools.call`, lists `job` (`execution.taskSupport`
"required"), `work` ("optional") and `plain` (no marker), answers a `tools/call` with
`params.task` with a `CreateTaskResult`, and serves `tasks/get`, `tasks/result` and `tasks/cancel`.
What its task answers are is what MODE makes them:

- `ok` — a task sends a `notifications/tasks/status` ("notified") after its creation, is working
  ("halfway") at its first tasks/get and completed with the text "done" from the second
  (`job`), or 1 s after its creation (`work`)
- `undeclared` — as `ok`, but the server declares no tasks capability
- `loud-notice` — as `ok`, but the notifications are hostile: a 100,000-character statusMessage
  full of terminal escapes in a status MCP does not define, one for another task that says it
  completed, and one that is no task at all
- `ttl-zero` — the task is created with a ttl of 0
- `fails` — the task fails: tasks/result gives the tool's error result ("disk full")
- `asks` — the task waits for input (input_required) until it is cancelled
- `at-once` — a `tools/call` asking for a task is answered at once with the plain result: "done"
  for `job`, the error result "disk full" for `work`
- `fails-refused` / `fails-bare` — as `fails`, but tasks/result answers a JSON-RPC error ("no
  result kept") / an empty result
- `result-refused` / `bad-result` — as `ok`, but tasks/result answers a JSON-RPC error ("no
  result kept") / a result whose `content` is not a list
- `stuck` / `asks-stuck` — the task is working / waits for input, and tasks/cancel answers a
  JSON-RPC error ("cannot cancel")
- the hostile modes both fixture servers share (task_modes.py, `pollIntervalMs` as
  `pollInterval`): `unknown-status`, `other-id`, `loud-message`, `poll-zero`, `poll-day`,
  `get-hangs`, `forever` (until it is cancelled), `dies`

Every request it receives is counted in the file COUNTS, when given, as JSON
`{"get": N, "result": N, "cancel": N, "call": N, "plain": N}`. The n-th task is `task-n`.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from task_modes import HANG, hostile, write_counts

MODE = sys.argv[1]
COUNTS = Path(sys.argv[2]) if len(sys.argv) > 2 else None
seen = {"get": 0, "result": 0, "cancel": 0, "call": 0, "plain": 0}
tasks: dict[str, dict] = {}  # task id -> {"tool", "started", "cancelled", "gets"}
DONE = {"content": [{"type": "text", "text": "done"}]}
PAYLOADS = {"fails": {"content": [{"type": "text", "text": "disk full"}], "isError": True}, "fails-bare": {},
            "bad-result": {"content": "not a list"}}  # what tasks/result answers, when not DONE


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def task(task_id: str, status: str, **fields: object) -> dict:
    return {"taskId": task_id, "status": status, "createdAt": "2026-12-06T00:00:00Z",
            "lastUpdatedAt": "2026-12-06T00:00:00Z", "ttl": 60000, "pollInterval": 50, **fields}


def state(task_id: str) -> dict | None:
    """The `tasks/get` answer for a task (None: no answer)."""
    entry = tasks[task_id]
    entry["gets"] += 1
    n = entry["gets"]
    if entry["cancelled"]:
        return task(task_id, "cancelled")
    fields = hostile(MODE, n)
    if fields == HANG:
        return None
    if isinstance(fields, dict):  # in this shape's names, for the task asked or the other one
        names = {"pollIntervalMs": "pollInterval"}
        return task(fields.get("taskId", task_id), **{names.get(key, key): value for key, value in fields.items()
                                                      if key != "taskId"})
    if MODE in ("fails", "fails-refused", "fails-bare"):
        return task(task_id, "failed", statusMessage="it broke")
    if MODE in ("asks", "asks-stuck"):
        return task(task_id, "input_required")
    if MODE == "stuck":
        return task(task_id, "working")
    if MODE == "loud-notice" and n == 1:
        time.sleep(0.2)  # the notifications are in before this answer
    if entry["tool"] == "work":
        ended = time.monotonic() - entry["started"] >= 1.0
        return task(task_id, "completed" if ended else "working")
    return task(task_id, "working", statusMessage="halfway") if n == 1 else task(task_id, "completed")


def answer(message: dict) -> dict | None:
    method, params = message.get("method"), message.get("params") or {}
    if method == "initialize":
        capabilities: dict = {"tools": {}}
        if MODE != "undeclared":
            capabilities["tasks"] = {"cancel": {}, "requests": {"tools": {"call": {}}}}
        return {"protocolVersion": "2025-11-25", "capabilities": capabilities,
                "serverInfo": {"name": "legacy-tasks-fixture", "version": "1"}}
    if method == "tools/list":
        return {"tools": [
            {"name": "job", "description": "A job run only as a task.", "inputSchema": {"type": "object"},
             "execution": {"taskSupport": "required"}},
            {"name": "work", "description": "Work that may run as a task.", "inputSchema": {"type": "object"},
             "execution": {"taskSupport": "optional"}},
            {"name": "plain", "description": "Never a task.", "inputSchema": {"type": "object"}}]}
    if method == "tools/call":
        if "task" not in params:
            seen["plain"] += 1
            if params.get("name") == "job":
                raise LookupError("job runs only as a task")
            return {"content": [{"type": "text", "text": f"plain {params.get('name')}"}]}
        seen["call"] += 1
        if MODE == "at-once":
            return DONE if params.get("name") == "job" else {"content": [{"type": "text", "text": "disk full"}],
                                                              "isError": True}
        task_id = f"task-{seen['call']}"
        tasks[task_id] = {"tool": params.get("name"), "started": time.monotonic(), "cancelled": False, "gets": 0}
        return {"task": task(task_id, "working", ttl=0 if MODE == "ttl-zero" else 60000)}
    if method == "tasks/get":
        seen["get"] += 1
        return state(params["taskId"])
    if method == "tasks/result":
        seen["result"] += 1
        if MODE in ("fails-refused", "result-refused"):
            raise LookupError("no result kept")
        return PAYLOADS.get(MODE, DONE)
    if method == "tasks/cancel":
        seen["cancel"] += 1
        if MODE in ("stuck", "asks-stuck"):
            raise LookupError("cannot cancel")
        tasks[params["taskId"]]["cancelled"] = True
        return task(params["taskId"], "cancelled")
    raise KeyError(method)


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        refused = None
        try:
            result = answer(message)
        except KeyError:
            send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "not found"}})
            continue
        except LookupError as exc:
            refused = str(exc)
        if COUNTS is not None:
            write_counts(COUNTS, seen)
        if refused is not None:
            send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32600, "message": refused}})
            continue
        if result is not None:
            send({"jsonrpc": "2.0", "id": message["id"], "result": result})
        if message.get("method") == "tools/call" and "task" in result and MODE in ("ok", "undeclared"):
            send({"jsonrpc": "2.0", "method": "notifications/tasks/status",
                  "params": task(result["task"]["taskId"], "working", statusMessage="notified")})
        if message.get("method") == "tools/call" and "task" in result and MODE == "loud-notice":
            for params in (task(result["task"]["taskId"], "paused", statusMessage="\x1b]0;owned\x07" + "y" * 100_000),
                           task("task-other", "completed", statusMessage="not yours"), {"taskId": ["no"]}, []):
                send({"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": params})


if __name__ == "__main__":
    main()
