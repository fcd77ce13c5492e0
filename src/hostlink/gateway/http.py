"""The gateway on Streamable HTTP: the SDK's app on 127.0.0.1 or [::1] only, behind the same
Host / Origin / key check as ``hostlink serve`` (its :class:`~hostlink.serve.app.ServeState`),
answered as JSON-RPC errors. The key is in memory and in a 0600 file of a private runtime
directory, removed at the end with everything else the session made."""

from __future__ import annotations

import asyncio
import json
import signal as signals
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    from hostlink.gateway.server import Gateway

STOP_SIGNALS = (signals.SIGINT, signals.SIGTERM, signals.SIGHUP)
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
    import uvicorn

    from hostlink.host.private import create_private_dir, remove_private_dir, write_private_file
    from hostlink.serve.app import ServeState
    from hostlink.serve.server import loopback_address

    bind = loopback_address(address)
    received: list[int] = []
    directory = None
    server = gateway.server()  # the SDK is imported before the session's background imports start
    app = server.streamable_http_app(streamable_http_path=PATH, host=bind)
    try:
        await gateway.start(cwd, environ, trust_flag=trust_flag)
        directory = create_private_dir("mcp-serve")
        key_file = write_private_file(directory, "key", token)
        guard = _Guard(app, ServeState(gateway.host, token, 1, None).check)

        class _Server(uvicorn.Server):
            @contextmanager
            def capture_signals(self) -> Iterator[None]:
                loop = asyncio.get_running_loop()
                for signum in STOP_SIGNALS:
                    loop.add_signal_handler(signum, self._stop, signum)
                try:
                    yield
                finally:
                    for signum in STOP_SIGNALS:
                        loop.remove_signal_handler(signum)

            def _stop(self, signum: int) -> None:
                received.append(signum)
                self.should_exit = True

            async def startup(self, sockets: list[Any] | None = None) -> None:
                await super().startup(sockets)
                if self.started:
                    bound = self.servers[0].sockets[0].getsockname()[1]
                    shown = f"[{bind}]" if ":" in bind else bind
                    on_listening(f"http://{shown}:{bound}{PATH}", key_file)

        config = uvicorn.Config(guard, host=bind, port=port, lifespan="on", log_level="warning", access_log=False,
                                server_header=False, timeout_graceful_shutdown=5)
        await _Server(config).serve()
        return received[0] if received else None
    finally:
        with anyio.CancelScope(shield=True):
            try:
                await gateway.host.shutdown()
            finally:
                if directory is not None:
                    remove_private_dir(directory)
