"""A small fake `claude` executable that replays a stream-json script (unit tests).

The script is `$CLAUDE_CONFIG_DIR/fake-claude.json` (CLAUDE_CONFIG_DIR is one of the few
variables the provider passes through); `{"steps": [...]}`, run in order, then exit 0.
Everything the fake receives (argv, environment, stdin lines) is appended to
`$CLAUDE_CONFIG_DIR/fake-claude-log.jsonl` for the test to inspect.

Steps (`op`):
- `control`: read our `initialize` control request and answer it (`account`,
  `commands`, `permission_mode` override the subscription-like defaults).
- `read_user`: read the user message line.
- `init`: start the proposal server from `--mcp-config`, `initialize` + `tools/list`
  it for real, and emit a matching `system/init` (keys in `override` replace fields).
- `message`: stream one assistant message as `stream_event` records: `blocks` of
  `{"text": …}`, `{"thinking": …}`, `{"tool": name, "input": {…}}` or
  `{"tool": name, "raw": "…"}` (`"split_private": true` on a text block cuts its delta in
  the middle of the private path); `stop_reason` (None: no message_delta); `id`.
- `result`: emit a `result` record (`fields` merged in).
- `emit`: write `record` as one line; `raw`: write `text` as one line.
- `call_tool`: send `tools/call` for `name` to the proposal server (an execution attempt).
- `sleep`, `exit` (`code`), `wait_signal` (block until SIGTERM, then exit 143;
  `ignore_term` ignores it so only SIGKILL ends the fake), `linger` (start a grandchild
  in the same process group that ignores SIGTERM), `sabotage` (replace the private request
  directory with a plain file, so removing it must fail; the directory moves to `<dir>.moved`).

`claude auth status` is answered as signed in without running a script, and the wrapper
`FakeClaude` writes answers `--version` and `--help` itself (from the script's
`version` and `lacks`, without a Python start); all three are logged as `preflight`,
not `argv`. `stderr` (a string) is written to stderr when a run starts.

Instead of `steps` the script may hold `runs`, a list of step lists: the n-th start of
the fake runs `runs[n]` (the last one again once they are used up), for a test where a
request's child and the prewarmed child of the next one must behave differently.

The string `$PRIVATE` in any emitted text is replaced by the private request directory.
"""

import json
import os
import signal
import subprocess
import sys
import time

CONFIG_DIR = os.environ["CLAUDE_CONFIG_DIR"]
LOG = os.path.join(CONFIG_DIR, "fake-claude-log.jsonl")


def log(kind, value):
    with open(LOG, "a") as handle:
        handle.write(json.dumps({"kind": kind, "value": value}) + "\n")


def arg(name):
    argv = sys.argv
    return argv[argv.index(name) + 1] if name in argv else None


PRIVATE = os.path.dirname(arg("--system-prompt-file") or "/nonexistent/x")


def out(record):
    text = json.dumps(record).replace("$PRIVATE", PRIVATE)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def read_line():
    line = sys.stdin.readline()
    log("stdin", line)
    return json.loads(line) if line.strip() else None


class Proposal:
    """The real proposal server, driven over its stdio like Claude would."""

    def __init__(self):
        with open(arg("--mcp-config")) as handle:
            servers = json.load(handle)["mcpServers"]
        (self.name, config), = servers.items()
        self.process = subprocess.Popen(
            [config["command"], *config["args"]], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        self.next_id = 0

    def request(self, method, params=None):
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}}
        self.process.stdin.write((json.dumps(message) + "\n").encode())
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def notify(self, method):
        self.process.stdin.write((json.dumps({"jsonrpc": "2.0", "method": method}) + "\n").encode())
        self.process.stdin.flush()


proposal = None
SESSION = "fake-session"


def stream_event(event):
    out({"type": "stream_event", "event": event, "session_id": SESSION, "parent_tool_use_id": None})


def message(step):
    message_id = step.get("id", "msg_fake_1")
    stream_event({"type": "message_start", "message": {"id": message_id, "type": "message", "role": "assistant",
                  "content": [], "usage": {"input_tokens": 5, "output_tokens": 1,
                  "cache_read_input_tokens": 3, "cache_creation_input_tokens": 2}}})
    for index, block in enumerate(step.get("blocks", [])):
        if "text" in block:
            stream_event({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
            text = block["text"].replace("$PRIVATE", PRIVATE)
            cut = text.find(PRIVATE) + len(PRIVATE) // 2 if block.get("split_private") else len(text)
            for piece in (text[:cut], text[cut:]):
                if piece:
                    stream_event({"type": "content_block_delta", "index": index,
                                  "delta": {"type": "text_delta", "text": piece}})
        elif "thinking" in block:
            stream_event({"type": "content_block_start", "index": index,
                          "content_block": {"type": "thinking", "thinking": ""}})
            stream_event({"type": "content_block_delta", "index": index,
                          "delta": {"type": "thinking_delta", "thinking": block["thinking"]}})
        else:
            stream_event({"type": "content_block_start", "index": index, "content_block": {
                "type": "tool_use", "id": block.get("id", f"toolu_{index}"), "name": block["tool"], "input": {}}})
            raw = block["raw"] if "raw" in block else json.dumps(block.get("input", {}))
            stream_event({"type": "content_block_delta", "index": index,
                          "delta": {"type": "input_json_delta", "partial_json": raw}})
        if step.get("sleep_between"):
            time.sleep(step["sleep_between"])
        stream_event({"type": "content_block_stop", "index": index})
    if step.get("stop_reason", "end_turn") is not None:
        stream_event({"type": "message_delta", "delta": {"stop_reason": step.get("stop_reason", "end_turn")},
                      "usage": {"output_tokens": 9}})
        stream_event({"type": "message_stop"})


def run(step):
    global proposal
    op = step["op"]
    if op == "control":
        request = read_line()
        account = {"tokenSource": "claude.ai", "apiKeySource": "none", "apiProvider": "firstParty",
                   "subscriptionType": "max"}
        account.update(step.get("account", {}))
        out({"type": "control_response", "response": {"subtype": "success", "request_id": request["request_id"],
             "response": {"commands": step.get("commands", []), "account": account,
                          "current_permission_mode": step.get("permission_mode", "dontAsk"), "pid": os.getpid()}}})
    elif op == "read_user":
        read_line()
    elif op == "init":
        proposal = Proposal()
        proposal.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                        "clientInfo": {"name": "fake-claude", "version": "0"}})
        proposal.notify("notifications/initialized")
        tools = proposal.request("tools/list")["result"]["tools"]
        record = {"type": "system", "subtype": "init", "cwd": os.getcwd(), "session_id": SESSION,
                  "tools": [f"mcp__{proposal.name}__{tool['name']}" for tool in tools],
                  "mcp_servers": [{"name": proposal.name, "status": "connected", "source": "dynamic"}],
                  "model": "claude-fake-1", "permissionMode": arg("--permission-mode"), "slash_commands": [],
                  "apiKeySource": "none", "claude_code_version": "2.1.332", "skills": [], "plugins": [],
                  "agents": ["general-purpose"]}
        record.update(step.get("override", {}))
        out(record)
    elif op == "message":
        message(step)
    elif op == "result":
        record = {"type": "result", "subtype": "success", "is_error": False, "stop_reason": "end_turn",
                  "session_id": SESSION, "result": ""}
        record.update(step.get("fields", {}))
        out(record)
    elif op == "emit":
        out(step["record"])
    elif op == "raw":
        sys.stdout.write(step["text"] + "\n")
        sys.stdout.flush()
    elif op == "call_tool":
        log("tools/call", proposal.request("tools/call", {"name": step["name"], "arguments": {}}))
    elif op == "sleep":
        time.sleep(step["seconds"])
    elif op == "exit":
        sys.exit(step["code"])
    elif op == "wait_signal":
        if step.get("ignore_term"):
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True:
            time.sleep(1)
    elif op == "linger":
        child = subprocess.Popen([sys.executable, "-c",
                                  "import signal,time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
        log("linger", child.pid)
    elif op == "sabotage":
        os.rename(PRIVATE, PRIVATE + ".moved")
        with open(PRIVATE, "w") as handle:
            handle.write("not a directory")
    else:
        raise SystemExit(f"fake claude: unknown op {op}")


def preflight():
    """Answer `auth status` (the doctor's); True when argv was that."""
    if sys.argv[1:3] == ["auth", "status"]:
        print(json.dumps({"loggedIn": True, "authMethod": "claude.ai", "apiProvider": "firstParty",
                          "subscriptionType": "max"}))
    else:
        return False
    log("preflight", sys.argv[1:])
    return True


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with open(os.path.join(CONFIG_DIR, "fake-claude.json")) as handle:
        script = json.load(handle)
    if preflight():
        return
    log("argv", sys.argv[1:])
    log("env", dict(os.environ))
    if script.get("stderr"):
        sys.stderr.write(script["stderr"] + "\n")
        sys.stderr.flush()
    if "runs" in script:
        with open(os.path.join(CONFIG_DIR, "fake-claude-starts"), "a+") as starts:
            starts.write("x")
            starts.seek(0)
            start = len(starts.read()) - 1
        steps = script["runs"][min(start, len(script["runs"]) - 1)]
    else:
        steps = script["steps"]
    for step in steps:
        run(step)


if __name__ == "__main__":
    main()
