"""The proposal-only MCP server the `claude` child sees: it lists tools and runs none.

Run as `python -I -S proposal_server.py <catalog.json> <violation-marker>`. Stdlib only and
line-delimited JSON-RPC on stdio, because it starts on every provider request's critical
path (importing the MCP SDK would add more than a second). It answers `initialize`,
`notifications/initialized`, `ping` and `tools/list` (the catalog file's `tools`);
any `tools/call` means Claude tried to execute a tool, so it writes the violation marker
(exclusive, 0600) and answers with an error. Everything else is "method not found".
"""

from __future__ import annotations

import json
import os
import sys

TYPE_CHECKING = False  # typing itself is not imported: it would cost start-up time
if TYPE_CHECKING:
    from typing import Any, BinaryIO

SERVER_NAME = "hostlink-proposals"
# Newest first; an unknown requested version gets the newest we speak.
PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
MAX_LINE_BYTES = 4 * 1024 * 1024


def _load_tools(path: str) -> list[Any]:
    with open(path, "rb") as handle:
        catalog = json.loads(handle.read())
    tools = catalog.get("tools") if isinstance(catalog, dict) else None
    if not isinstance(tools, list):
        raise ValueError("catalog has no tools list")
    return tools


def _mark_violation(path: str, name: object) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except FileExistsError:
        return
    with os.fdopen(fd, "w") as handle:
        handle.write(json.dumps({"violation": "tools/call", "tool": str(name)[:256]}))


def _answer(request: dict[str, Any], tools: list[Any], marker_path: str) -> dict[str, Any]:
    method = request.get("method")
    params = request.get("params")
    if not isinstance(params, dict):
        params = {}
    if method == "initialize":
        requested = params.get("protocolVersion")
        version = requested if requested in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
        return {
            "result": {
                "protocolVersion": version,
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": SERVER_NAME, "version": "1"},
            }
        }
    if method == "tools/list":
        return {"result": {"tools": tools}}
    if method == "ping":
        return {"result": {}}
    if method == "tools/call":
        _mark_violation(marker_path, params.get("name"))
        return {"error": {"code": -32603, "message": "tools are proposals only: the host executes them"}}
    return {"error": {"code": -32601, "message": "method not found"}}


def serve(catalog_path: str, marker_path: str, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None,
          ) -> None:
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    tools = _load_tools(catalog_path)
    while True:
        line = stdin.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        if len(line) > MAX_LINE_BYTES:
            return  # refuse to buffer an unbounded line; the client sees the server go away
        try:
            message = json.loads(line)
        except ValueError:
            reply = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}}
            stdout.write(json.dumps(reply).encode() + b"\n")
            stdout.flush()
            continue
        if not isinstance(message, dict) or "method" not in message:
            continue  # a response or junk: nothing to answer
        if message.get("method") == "tools/call":
            # Mark before answering, whether or not the call carries an id.
            answer = _answer(message, tools, marker_path)
        elif "id" not in message:
            continue  # notifications (initialized, cancelled, …) need no answer
        else:
            answer = _answer(message, tools, marker_path)
        if "id" not in message:
            continue
        stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], **answer}).encode() + b"\n")
        stdout.flush()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.stderr.write("usage: proposal_server.py CATALOG MARKER\n")
        sys.exit(2)
    try:
        serve(sys.argv[1], sys.argv[2])
    except KeyboardInterrupt:  # Claude stops its MCP servers with SIGINT
        sys.exit(130)
