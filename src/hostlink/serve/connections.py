"""Connection hygiene for `hostlink serve`: bounded open connections, bounded waiting, bounded logs.

uvicorn bounds neither how many connections stay open nor how long one may take to deliver a
request (its keep-alive timer runs only between requests and stops at the first byte) or to
take its answer (a write to a client that never reads waits for ever), so a local process
holding idle, half-sent or never-reading connections used to take every descriptor. The HTTP
protocol here is uvicorn's h11 one with four rules:

- **a request deadline**: a connection must deliver a complete request, headers and body, within
  `REQUEST_SECONDS` of opening or of its last answer, or it is closed;
- **a write deadline**: a connection whose answer stalls (the client takes none of it, and the
  kernel's and the transport's buffers are full) and does not start draining within
  `WRITE_SECONDS` is closed;
- **no pipelining**: a client that sends its next request before its answer is complete gets
  that answer, then the connection closes (RFC 9112 lets a client retry what was not answered;
  no SDK pipelines). A pipelining client that never reads could otherwise keep the server
  answering, each connection "being answered" for ever and out of the bound's reach;
- **a connection bound** (`connection_bound`, from the descriptor limit): a connection
  beyond it closes open connections until the bound holds again: first those stalled on
  writing (the longest stalled first), then those without a complete request (idle or
  half-sent, the oldest first), never one whose request is being answered; itself when there
  is none. A new client always gets in, and the newest connection is the last to go.

Repeated warnings (invalid requests, evictions, `accept()` out of descriptors) print one line
per kind and minute, without traceback (`OncePerKind`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from hostlink.host.platform.limits import descriptor_limit

REQUEST_SECONDS = 10.0
WRITE_SECONDS = 10.0
MAX_CONNECTIONS = 256
ACCEPT_BACKLOG = 32  # the listen queue, and how many connections asyncio accepts in one loop iteration
# Batches in flight before the bound sees them: asyncio calls `connection_made` two iterations after
# `accept()`, and a connection closed by the bound frees its descriptor one iteration later, so when
# a batch is accepted, the two batches before it and the last one's evictions still hold descriptors.
ACCEPT_BATCHES_IN_FLIGHT = 3
BASE_DESCRIPTORS = 32  # an idle server holds 7 (interpreter, loop, listener, stdio): the rest is spare
# A running request holds about 5 (claude's pipes, private files), a prewarmed child as many: twice that, and spare.
DESCRIPTORS_PER_REQUEST = 12
MIN_CONNECTIONS = 16
LOG_EVERY_SECONDS = 60.0
log = logging.getLogger("uvicorn.error")
# Which API a request that is not HTTP meant is unknowable: this body reads as an invalid-request
# error in both SDKs (Anthropic: type + error.type/message; OpenAI: error.message/type/param/code).
_NOT_HTTP = json.dumps({"type": "error", "error": {"type": "invalid_request_error", "param": None, "code": None,
                                                   "message": "the request is not valid HTTP/1.1"}}).encode()


def connection_bound(max_concurrent: int) -> int:
    """Open connections allowed: `MAX_CONNECTIONS`, or fewer when `ulimit -n` is low (on
    Windows, the C runtime's documented limit; see `hostlink.host.platform.limits`)."""
    soft = descriptor_limit()
    if soft is None:
        return MAX_CONNECTIONS
    children = 2 * max_concurrent  # each request's claude, and one prewarmed for each slot's next round
    reserve = BASE_DESCRIPTORS + ACCEPT_BATCHES_IN_FLIGHT * ACCEPT_BACKLOG + DESCRIPTORS_PER_REQUEST * children
    if soft - reserve < MIN_CONNECTIONS:
        raise ValueError(f"the descriptor limit (ulimit -n {soft}) is too low for {max_concurrent} concurrent "
                         f"requests; raise it to at least {reserve + MIN_CONNECTIONS}")
    return min(MAX_CONNECTIONS, soft - reserve)


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the request deadline and the connection bound."""

    max_connections = MAX_CONNECTIONS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._waiting_since = 0.0
        self._deadline: asyncio.TimerHandle | None = None
        self._stalled_since: float | None = None
        self._write_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]  # as uvicorn's own
        super().connection_made(transport)
        self._start_waiting()
        excess = len(self.connections) - self.max_connections
        if excess > 0:
            log.warning("more than %d connections open: the stalled and the oldest without a complete request "
                        "are closed", self.max_connections)
            for victim in self._evictable()[:excess] or [self]:
                victim.drop()

    def _evictable(self) -> list[GuardedH11Protocol]:
        """Stalled writers, the longest stalled first, then connections without a complete
        request, the oldest first (this one, the newest, last)."""
        guarded = [c for c in self.connections if isinstance(c, GuardedH11Protocol)]
        stalled = sorted((c for c in guarded if c._stalled_since is not None), key=lambda c: c._stalled_since or 0.0)
        waiting = sorted((c for c in guarded if c._stalled_since is None and c.waiting()),
                         key=lambda c: c._waiting_since)
        return stalled + waiting

    def waiting(self) -> bool:
        """No complete request: idle, or its headers or body still arriving."""
        cycle = self.cycle
        return cycle is None or cycle.response_complete or cycle.more_body

    def drop(self) -> None:
        self.transport.abort()  # nothing buffered is worth a descriptor (a closing one's unsent answer neither)

    def send_400_response(self, msg: str) -> None:
        """Malformed HTTP (framing, smuggling, oversized headers): a JSON 400, then close."""
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(_NOT_HTTP)).encode()),
                   (b"cache-control", b"no-store"), (b"connection", b"close")]
        response = h11.Response(status_code=400, headers=headers, reason=b"Bad Request")
        for event in (response, h11.Data(data=_NOT_HTTP), h11.EndOfMessage()):
            self.transport.write(self.conn.send(event))
        self.transport.close()

    def on_response_complete(self) -> None:
        if self.conn.trailing_data[0] and not self.transport.is_closing():
            self.transport.close()  # pipelined: its next requests are not read (the client may retry them)
        super().on_response_complete()
        if not self.transport.is_closing():
            self._start_waiting()

    def pause_writing(self) -> None:
        """The client takes no more of the answer: it has `WRITE_SECONDS` to start again."""
        super().pause_writing()
        if self._stalled_since is None:
            self._stalled_since = time.monotonic()
            self._write_deadline = self.loop.call_later(WRITE_SECONDS, self.drop)

    def resume_writing(self) -> None:
        super().resume_writing()
        self._stop_stall()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_waiting()
        self._stop_stall()
        super().connection_lost(exc)

    def _stop_stall(self) -> None:
        self._stalled_since = None
        if self._write_deadline is not None:
            self._write_deadline.cancel()
            self._write_deadline = None

    def _start_waiting(self) -> None:
        self._stop_waiting()
        self._waiting_since = time.monotonic()
        self._deadline = self.loop.call_later(REQUEST_SECONDS, self._expire)

    def _stop_waiting(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self) -> None:
        self._deadline = None
        if self.waiting():
            self.drop()


def bounded_protocol(max_connections: int) -> type[GuardedH11Protocol]:
    """The protocol class uvicorn instantiates per connection, with this server's bound."""
    return type("GuardedH11Protocol", (GuardedH11Protocol,), {"max_connections": max_connections})


class OncePerKind(logging.Filter):
    """At most one record per kind (its message template) a minute, never with a traceback.

    A record logged with `extra={"every_time": True}` (an internal error's id) always passes.
    """

    def __init__(self) -> None:
        super().__init__()
        self._last: dict[str, tuple[float, int]] = {}  # kind -> (when last shown, suppressed since)

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "every_time", False):
            return True
        kind = str(record.msg)[:200]
        now = time.monotonic()
        shown, suppressed = self._last.get(kind, (-LOG_EVERY_SECONDS, 0))
        if now - shown < LOG_EVERY_SECONDS:
            self._last[kind] = (shown, suppressed + 1)
            return False
        self._last[kind] = (now, 0)
        if record.exc_info and record.exc_info[1] is not None:
            record.msg = f"{record.msg} ({type(record.exc_info[1]).__name__})"
        record.exc_info = record.exc_text = record.stack_info = None
        if suppressed:
            record.msg = f"{record.msg} (and {suppressed} more like it in the last minute)"
        return True


def loop_exception(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The event loop's errors (`socket.accept() out of system resource`…) as one short line."""
    error = context.get("exception")
    message = str(context.get("message") or "event loop error")[:200]
    log.error(message + (f" ({type(error).__name__})" if error is not None else ""))
