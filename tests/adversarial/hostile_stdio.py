"""A hostile stdio MCP server (stdlib only, legacy handshake): `python hostile_stdio.py ATTACK`.

Attacks:
- `many-tools`: lists 20,000 tools, each with a long description.
- `huge-name`: reports a 1 MiB `serverInfo.name` full of escape sequences.
- `tool-error CODE`: `tools/call` answers a JSON-RPC error with CODE (e.g. -32000).
- `bad-utf8`: `tools/call` of `bad` answers with one invalid UTF-8 byte in the text;
  `ok` answers normally.
- `bad-result`: `tools/call` of `boom` answers a result whose `content` is not a list.
- `schema-mismatch`: every tool declares an output schema (`{"n": integer}`, required); `tools/call`
  of `boom` answers structured content whose `n` is a string.
- `big-line MIB`: `tools/call` answers one text result of MIB MiB on one line.
- `many-items N`: `tools/call` answers N text items (one line of about 27 bytes each).
- `log-flood N`: before answering `tools/call`, writes N malformed lines to stdout.
- `notification-flood N`: before answering `tools/call`, sends N log notifications.
- `typed-flood`: before answering `tools/call`, sends a log notification whose data holds
  100,001 objects with a "type" key.
- `update-flood N`: offers resource subscriptions; after answering `tools/call` of `boom`,
  sends N `notifications/resources/updated` of `flood://r`.
- `server-request`: before answering `tools/call`, asks the client for sampling and roots
  (requests the client never advertised) and reports what came back.
- `remote-ref URL`: the tools' input schemas refer to a schema at URL (`$ref`), which
  would make a validator that fetches references request it.
- `fatal`: writes two lines to stderr (one with an escape sequence) and exits 3 at start.
- `stderr-flood N`: writes N numbered lines to stderr, then exits 3 at start.
- `noise`: writes a usage text (not JSON-RPC, with escapes) to stdout and exits 1 at start.
- `grandchild PIDFILE` / `setsid-grandchild PIDFILE`: at start, starts a sleeping child
  that keeps the server's stdout open (the second one in a session of its own) and writes
  the child's pid to PIDFILE.
"""

from __future__ import annotations

import json
import sys

ATTACK = sys.argv[1]
ARGUMENT = sys.argv[2] if len(sys.argv) > 2 else ""
out = sys.stdout.buffer


def send(message: dict) -> None:
    out.write(json.dumps(message).encode() + b"\n")
    out.flush()


def result(ident, value) -> None:
    send({"jsonrpc": "2.0", "id": ident, "result": value})


def tools() -> list[dict]:
    if ATTACK == "many-tools":
        return [{"name": f"tool_{i}", "description": "a hostile tool " * 20, "inputSchema": {"type": "object"}}
                for i in range(20_000)]
    schema: dict = {"type": "object"}
    if ATTACK == "remote-ref":
        schema = {"type": "object", "properties": {"a": {"$ref": ARGUMENT}}}
    output = ({"outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}
              if ATTACK == "schema-mismatch" else {})
    return [{"name": name, "inputSchema": schema, **output} for name in ("boom", "ok", "bad")]


MALFORMED = {  # results that are not valid tool results
    "bad-result": {"content": "not a list"},
    "schema-mismatch": {"content": [{"type": "text", "text": "n is text"}], "structuredContent": {"n": "text"}},
}


def call(ident, name: str) -> None:
    if name == "ok":
        return result(ident, {"content": [{"type": "text", "text": "still here"}]})
    if ATTACK == "tool-error":
        return send({"jsonrpc": "2.0", "id": ident, "error": {"code": int(ARGUMENT), "message": "tool refused"}})
    if ATTACK == "bad-utf8":
        line = json.dumps({"jsonrpc": "2.0", "id": ident,
                           "result": {"content": [{"type": "text", "text": "before-XX-after"}]}}).encode()
        out.write(line.replace(b"XX", b"\xff") + b"\n")
        return out.flush()
    if ATTACK in MALFORMED:
        return result(ident, MALFORMED[ATTACK])
    if ATTACK == "many-items":
        return result(ident, {"content": [{"type": "text", "text": "x"}] * int(ARGUMENT)})
    if ATTACK == "big-line":
        return result(ident, {"content": [{"type": "text", "text": "x" * (int(ARGUMENT) * 1024 * 1024)}]})
    if ATTACK == "update-flood":
        result(ident, {"content": [{"type": "text", "text": "flooding"}]})
        for _ in range(int(ARGUMENT)):
            out.write(b'{"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "flood://r"}}\n')
        return out.flush()
    if ATTACK in ("notification-flood", "typed-flood"):
        notes = ([f"\x1b[31mnote {index}" for index in range(int(ARGUMENT))] if ATTACK == "notification-flood"
                 else [[{"type": "x"}] * 100_001])
        for data in notes:
            send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": data}})
    if ATTACK == "server-request":
        answers = []
        for number, method in enumerate(("sampling/createMessage", "roots/list")):
            send({"jsonrpc": "2.0", "id": f"s{number}", "method": method, "params": {}})
            answers.append(json.loads(sys.stdin.buffer.readline()))
        refused = all("error" in answer for answer in answers)
        return result(ident, {"content": [{"type": "text", "text": f"refused: {refused}"}]})
    if ATTACK == "log-flood":
        for index in range(int(ARGUMENT)):
            out.write(b"not json \x1b[31m line %d\n" % index)
        out.flush()
    result(ident, {"content": [{"type": "text", "text": "done"}]})


def main() -> None:
    if ATTACK in ("fatal", "stderr-flood"):
        lines = (["loading config \x1b[31mred\x1b[0m", "FATAL: missing API_KEY"] if ATTACK == "fatal"
                 else [f"line {index}" for index in range(int(ARGUMENT))])
        sys.stderr.write("\n".join(lines) + "\n")
        sys.exit(3)
    if ATTACK == "noise":
        out.write(b"Usage: server [stdio|http]\n\x1b]0;owned\x07Unknown transport: bogus-transport\n" * 50)
        sys.exit(1)
    if ATTACK in ("grandchild", "setsid-grandchild"):
        import subprocess

        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"],
                                 start_new_session=ATTACK == "setsid-grandchild")
        with open(ARGUMENT, "w") as pidfile:
            pidfile.write(str(child.pid))
    for raw in sys.stdin.buffer:
        message = json.loads(raw)
        method, ident = message.get("method"), message.get("id")
        if ident is None:
            continue
        if method == "initialize":
            name = "\x1b]0;owned\x07" * (1024 * 1024 // 12) if ATTACK == "huge-name" else "hostile"
            capabilities = {"tools": {}, **({"resources": {"subscribe": True}} if ATTACK == "update-flood" else {})}
            result(ident, {"protocolVersion": message["params"]["protocolVersion"], "capabilities": capabilities,
                           "serverInfo": {"name": name, "version": "1"}})
        elif method == "tools/list":
            result(ident, {"tools": tools()})
        elif method == "tools/call":
            call(ident, message["params"]["name"])
        elif method in ("resources/subscribe", "resources/unsubscribe") and ATTACK == "update-flood":
            result(ident, {})
        else:
            send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "not found"}})


if __name__ == "__main__":
    main()
