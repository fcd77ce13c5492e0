"""The gateway on Streamable HTTP: the SDK's app on 127.0.0.1 or [::1] only, served as
`hostlink serve` is (its connection bound, request deadline and bounded logs), behind the same
Host / Origin / key check (its `ServeState`), answered as JSON-RPC
errors. The key is in memory and in a 0600 file of a private runtime
directory, removed at the end with everything else the session made."""

from __future__ import annotations

import json
import signal as signals
from collections.abc import Callable, Mapping, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from hostlink.host.platform.console import TERMINATING_SIGNALS

if TYPE_CHECKING:
    from hostlink.gateway.server import Gateway

STOP_SIGNALS = (signals.SIGINT, *TERMINATING_SIGNALS)
PATH = "/mcp"


class _Guard:
    """Every HTTP request passes the serve endpoint's check first (403 / 401 otherwise)."""

    def __init__(self, app: Any, check: Callable[[MutableMapping[str, Any]], None]) -> None:
        self._app = app
        self._check = check

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        from hostlink.serve.core import ApiError

        if scope["type"] == "http":
            try:
                self._check(scope)
            except ApiError as refused:
                body = json.dumps({"jsonrpc": "2.0", "id": None,
                                   "error": {"code": -32001, "message": refused.message}}).encode()
                await send({"type": "http.response.start", "status": refused.status,
                            "headers": [(b"content-type", b"application/json"), (b"cache-control", b"no-store"),
                                        (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self._app(scope, receive, send)


async def serve_http(gateway: Gateway, *, address: str, port: int, token: str, cwd: Path,
                     environ: Mapping[str, str], trust_flag: bool,
                     on_listening: Callable[[str, Path], None]) -> int | None:
    """Serve until a stop signal; returns its number (None otherwise)."""
    from hostlink.host.private import create_private_dir, remove_private_dir, write_private_file
    from hostlink.serve.app import ServeState
    from hostlink.serve.server import loopback_address, run_loopback

    bind = loopback_address(address)
    directory = None
    server = gateway.server()  # the SDK is imported before the session's background imports start
    app = server.streamable_http_app(streamable_http_path=PATH, host=bind)
    try:
        await gateway.start(cwd, environ, trust_flag=trust_flag)
        directory = create_private_dir("mcp-serve")
        key_file = write_private_file(directory, "key", token)
        guard = _Guard(app, ServeState(gateway.host, token, 1, None).check)
        shown = f"[{bind}]" if ":" in bind else bind
        return await run_loopback(guard, bind=bind, port=port, max_concurrent=1, lifespan="on", graceful_seconds=5,
                                  on_listening=lambda bound: on_listening(f"http://{shown}:{bound}{PATH}", key_file))
    finally:
        with anyio.CancelScope(shield=True):
            try:
                await gateway.host.shutdown()
            finally:
                if directory is not None:
                    remove_private_dir(directory)
