"""Running the endpoint: uvicorn on a loopback address, inside one host session.

The session starts first and always shuts down last. Ctrl-C, SIGTERM and SIGHUP do not go
through uvicorn's own handlers (which would skip the session's shutdown): each one cancels
every running request (its `claude` stops at once) and asks uvicorn to finish; uvicorn
closes its listener and connections, then the session shuts down and the key file goes.
"""

from __future__ import annotations

import asyncio
import signal as signals
import socket
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio
import uvicorn

from hostlink.host import Notifier
from hostlink.host.platform.console import TERMINATING_SIGNALS, capture
from hostlink.host.private import create_private_dir, remove_private_dir, write_private_file
from hostlink.host.session import HostSession
from hostlink.serve.app import create_app
from hostlink.serve.connections import (
    ACCEPT_BACKLOG,
    OncePerKind,
    bounded_protocol,
    connection_bound,
    log,
    loop_exception,
)

LOOPBACK_ADDRESSES = {"127.0.0.1": "127.0.0.1", "::1": "::1", "[::1]": "::1", "localhost": "127.0.0.1"}
STOP_SIGNALS = (signals.SIGINT, *TERMINATING_SIGNALS)
GRACEFUL_SECONDS = 15


def loopback_address(address: str) -> str:
    """The address to bind for `address`; anything but loopback is refused."""
    try:
        return LOOPBACK_ADDRESSES[address.strip().lower()]
    except KeyError:
        raise ValueError(f"only 127.0.0.1 or [::1] can be bound, not {address[:60]!r}") from None


@dataclass(frozen=True)
class Listening:
    """Where the endpoint listens, told to the caller once it accepts connections."""

    address: str
    port: int
    key_file: Path

    @property
    def base_url(self) -> str:
        shown = f"[{self.address}]" if ":" in self.address else self.address
        return f"http://{shown}:{self.port}"


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, on_stop: Callable[[], None],
                 on_listening: Callable[[int], None]) -> None:
        super().__init__(config)
        self._on_stop = on_stop
        self._on_listening = on_listening
        self.received: list[int] = []

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        with capture(asyncio.get_running_loop(), STOP_SIGNALS, self._stop):
            yield

    def _stop(self, signum: int) -> None:
        self.received.append(signum)
        self._on_stop()
        self.should_exit = True

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            self._on_listening(self.servers[0].sockets[0].getsockname()[1])


@contextmanager
def _bounded_logs() -> Iterator[None]:
    """uvicorn's warnings and the loop's errors: one line per kind and minute, no tracebacks."""
    loop = asyncio.get_running_loop()
    previous = loop.get_exception_handler()
    limiter = OncePerKind()
    log.addFilter(limiter)
    loop.set_exception_handler(loop_exception)
    try:
        yield
    finally:
        loop.set_exception_handler(previous)
        log.removeFilter(limiter)


async def run_loopback(app: Any, *, bind: str, port: int, max_concurrent: int, on_listening: Callable[[int], None],
                       on_stop: Callable[[], None] = lambda: None, lifespan: Literal["on", "off"] = "off",
                       graceful_seconds: int = GRACEFUL_SECONDS) -> int | None:
    """Serve `app` on the loopback address `bind` until a stop signal (returned, None
    otherwise), with the connection bound and request deadline of
    `hostlink.serve.connections` and its bounded logs: the one way a host of hostlink
    serves HTTP (`hostlink serve`, `hostlink mcp serve --http`)."""
    config = uvicorn.Config(app, host=bind, port=port, lifespan=lifespan, log_level="warning", access_log=False,
                            server_header=False, timeout_graceful_shutdown=graceful_seconds,
                            http=bounded_protocol(connection_bound(max_concurrent)), backlog=ACCEPT_BACKLOG)
    server = _Server(config, on_stop, on_listening)
    with _bounded_logs():
        await server.serve()
    return server.received[0] if server.received else None


async def serve(host: HostSession, *, token: str, address: str = "127.0.0.1", port: int = 8484,
                max_concurrent: int = 4, cwd: Path, notifier: Notifier, project_trusted: bool = False,
                on_listening: Callable[[Listening], None] = lambda listening: None,
                extra_usage: str | None = None, access: Callable[[str], None] | None = None,
                preflight: Callable[[HostSession], Coroutine[Any, Any, None]] | None = None) -> int | None:
    """Serve until a stop signal; returns the signal number that stopped it (None otherwise).

    The key lives in memory and in a 0600 file of a private runtime directory, removed at
    the end with everything else the session made. `access` gets one access-log line per
    request; `preflight` runs beside the server once it started (it must bound itself).
    """
    bind = loopback_address(address)
    connection_bound(max_concurrent)  # a descriptor limit too low to serve is refused before the session starts
    await host.start(cwd=cwd, project_trusted=project_trusted, notifier=notifier)
    directory = None
    try:
        directory = create_private_dir("serve")
        key_file = write_private_file(directory, "key", token)
        app = create_app(host, token=token, max_concurrent=max_concurrent, extra_usage=extra_usage, access=access)
        async with anyio.create_task_group() as group:
            if preflight is not None:
                group.start_soon(preflight, host)
            received = await run_loopback(app, bind=bind, port=port, max_concurrent=max_concurrent,
                                          on_stop=app.state.serve.stop_all,
                                          on_listening=lambda bound: on_listening(Listening(bind, bound, key_file)))
            group.cancel_scope.cancel()
        return received
    finally:
        with anyio.CancelScope(shield=True):
            try:
                await host.shutdown()
            finally:
                if directory is not None:
                    remove_private_dir(directory)
