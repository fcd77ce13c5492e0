"""One independent process of the concurrent-refresh test.

`python fake_oauth_refresh_worker.py NAME URL READY_DIR GO_FILE`: once ready (imports done,
a file named by its pid in READY_DIR), waits until GO_FILE exists, then
connects to the OAuth-protected MCP server URL with hostlink's auth and runtime (refreshing
the expired stored token, or adopting one another process already rotated), calls `whoami`
and prints one JSON line: the answer and a hash of the access token it used.
"""

import asyncio
import hashlib
import json
import os
import sys
import time


async def main(name: str, url: str, ready_dir: str, go_file: str) -> None:
    import mcp.client.streamable_http  # noqa: F401 - paid before the start line, not after it

    from hostlink.mcp.auth.manager import AuthManager
    from hostlink.mcp.auth.store import record_key
    from hostlink.mcp.config.schema import parse_server
    from hostlink.mcp.runtime.clients import McpRuntime

    server = parse_server({"url": url, "auth": "oauth"})
    manager = AuthManager()
    runtime = McpRuntime({name: server}, auth=manager)
    open(os.path.join(ready_dir, str(os.getpid())), "w").close()
    while not os.path.exists(go_file):
        time.sleep(0.01)
    try:
        result = await runtime.call_tool(name, "whoami", {})
        token = manager._tokens[record_key(name, server)].access_token
        print(json.dumps({"answer": result.content[0].text,
                          "token": hashlib.sha256(token.encode()).hexdigest()}), flush=True)
    finally:
        await runtime.aclose()
        await manager.aclose()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
