"""A stdio MCP server (stdlib only, legacy handshake) that records what it receives:
`python mcp_recording_server.py LOG`. Each message's method (and for a cancellation its
`requestId`) goes to LOG as one JSON line. Tool `wait` never answers; `echo` answers
`text`; `update` sends an update of each resource in `uris`, in order, then answers;
`resources/subscribe` and `resources/unsubscribe` are accepted."""

import json
import sys

log = open(sys.argv[1], "a", buffering=1)  # noqa: SIM115 - open for the life of the process


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


for raw in sys.stdin:
    message = json.loads(raw)
    method, ident, params = message.get("method"), message.get("id"), message.get("params") or {}
    log.write(json.dumps({"method": method, "id": ident, "requestId": params.get("requestId")}) + "\n")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": ident, "result": {"protocolVersion": params["protocolVersion"],
              "capabilities": {"tools": {}, "resources": {"subscribe": True}},
              "serverInfo": {"name": "recording", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": ident, "result": {"tools": [
            {"name": name, "inputSchema": {"type": "object"}} for name in ("wait", "echo", "update")]}})
    elif method == "tools/call" and params.get("name") == "echo":
        text = (params.get("arguments") or {}).get("text", "")
        send({"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": text}]}})
    elif method == "tools/call" and params.get("name") == "update":
        for uri in (params.get("arguments") or {}).get("uris", []):
            send({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}})
        send({"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": "sent"}]}})
    elif method in ("resources/subscribe", "resources/unsubscribe"):
        send({"jsonrpc": "2.0", "id": ident, "result": {}})
    elif ident is not None and method != "tools/call":
        send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "not found"}})
