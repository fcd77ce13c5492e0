"""A hand-written stdio MCP server (2026-07-28 only) whose one tool, `job`, is always run as a
task of the tasks extension, and whose task answers are what MODE makes them:

- `ok` — working once (statusMessage "halfway"), then completed with the text "done"
- `ttl-zero` — the task is created with a ttlMs of 0
- `asks-model` — the task asks for input other than elicitation (a sampling request)
- `asks-loud` — the task asks a question (elicitation) whose message is full of terminal escapes
- `asks-many` — the task asks 11 questions at once
- `long-id` — the task is created with an id of 300 characters
- `asks-long` — the task asks one question of 20,000 characters
- the hostile modes both fixture servers share (task_modes.py): `unknown-status`, `other-id`,
  `loud-message`, `poll-zero`, `poll-day`, `get-hangs`, `forever`, `dies`

Every `tasks/get` and `tasks/cancel` it receives is counted in the file COUNTS, when given, as
JSON `{"get": N, "cancel": N, "call": N}`. The n-th call is task `task-n`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from task_modes import HANG, hostile, write_counts

MODE = sys.argv[1]
COUNTS = Path(sys.argv[2]) if len(sys.argv) > 2 else None
seen = {"get": 0, "cancel": 0, "call": 0}


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def task(status: str, **fields: object) -> dict:
    return {"taskId": f"task-{seen['call']}", "status": status, "createdAt": "2026-12-06T00:00:00Z",
            "lastUpdatedAt": "2026-12-06T00:00:00Z", "ttlMs": 60000, "pollIntervalMs": 50, **fields}


def created() -> dict:
    made = {**task("working", ttlMs=0 if MODE == "ttl-zero" else 60000), "resultType": "task"}
    return {**made, "taskId": "t" * 300} if MODE == "long-id" else made


def got() -> dict | None:
    """The `tasks/get` answer of the n-th poll (None: no answer)."""
    n = seen["get"]
    done = {"status": "completed", "result": {"content": [{"type": "text", "text": "done"}]}}
    fields = hostile(MODE, n)
    if fields == HANG:
        return None
    if isinstance(fields, dict):
        return task(**{**(done if fields["status"] == "completed" else {}), **fields})
    if MODE == "asks-model":
        return task("input_required", inputRequests={"m": {"method": "sampling/createMessage", "params": {
            "messages": [], "maxTokens": 10}}})
    if MODE == "asks-loud":
        return task("input_required", inputRequests={"q": {"method": "elicitation/create", "params": {
            "message": "\x1b[31mWhich\x1b]0;owned\x07 name?",
            "requestedSchema": {"type": "object", "properties": {}}}}})
    if MODE in ("asks-many", "asks-long"):
        count, size = (11, 10) if MODE == "asks-many" else (1, 20_000)
        return task("input_required", inputRequests={f"q{k}": {"method": "elicitation/create", "params": {
            "message": "?" * size, "requestedSchema": {"type": "object", "properties": {}}}} for k in range(count)})
    return task("working", statusMessage="halfway") if n == 1 else task(**done)


def answer(message: dict) -> dict | None:
    method = message.get("method")
    if method == "server/discover":
        return {"_meta": {"io.modelcontextprotocol/serverInfo": {"name": "tasks-fixture", "version": "1"}},
                "supportedVersions": ["2026-07-28"], "resultType": "complete",
                "capabilities": {"tools": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}}
    if method == "tools/list":
        return {"resultType": "complete", "ttlMs": 0, "cacheScope": "private",
                "tools": [{"name": "job", "description": "A job run as a task.", "inputSchema": {"type": "object"}}]}
    if method == "tools/call":
        seen["call"] += 1  # each call a task of its own: task-1, task-2, ...
        return created()
    if method == "tasks/get":
        seen["get"] += 1
        state = got()
        if state is not None and MODE != "other-id":
            state["taskId"] = message["params"]["taskId"]
        return state
    if method == "tasks/cancel":
        seen["cancel"] += 1
        return {"resultType": "complete"}
    raise KeyError(method)


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        try:
            result = answer(message)
        except KeyError:
            send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "not found"}})
            continue
        if COUNTS is not None:
            write_counts(COUNTS, seen)
        if result is not None:
            send({"jsonrpc": "2.0", "id": message["id"], "result": result})


if __name__ == "__main__":
    main()
