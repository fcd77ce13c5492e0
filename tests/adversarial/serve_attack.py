"""What the hostile `hostlink serve` tests share: raw requests, and the server's descriptors and memory.

The figures come from `/proc/<pid>`: open descriptors, resident memory now (`VmRSS`) and
its peak (`VmHWM`, reset by writing 5 to `clear_refs`).
"""

from __future__ import annotations

import http.client
import json
import os
import re
import select
import socket
import time
from collections.abc import Iterator
from pathlib import Path

from hostlink.serve.connections import ACCEPT_BACKLOG
from serve_support import KEY, ServeProcess

MIB = 1024 * 1024
TRACEBACK = re.compile(r"Traceback|File \"")


def descriptors(server: ServeProcess) -> int:
    return len(os.listdir(f"/proc/{server.process.pid}/fd"))


def memory_mib(server: ServeProcess) -> dict[str, float]:
    """`VmRSS` and `VmHWM` of the server, in MiB."""
    figures = {}
    for line in Path(f"/proc/{server.process.pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            figures[key] = int(value.split()[0]) / 1024
    return figures


def reset_peak(server: ServeProcess) -> None:
    Path(f"/proc/{server.process.pid}/clear_refs").write_text("5")


def request(server: ServeProcess, method: str, path: str, body: bytes | dict | None = None,
            headers: dict | None = None, timeout: float = 60) -> tuple[int, dict, bytes]:
    """Status, lower-cased headers and raw body of one request (default headers: a valid key)."""
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    sent = {"host": f"127.0.0.1:{server.port}", "x-api-key": KEY, "content-type": "application/json"}
    sent.update(headers or {})
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=timeout)
    try:
        connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for key, value in sent.items():
            if value is not None:
                connection.putheader(key, value)
        if data is not None:
            connection.putheader("content-length", str(len(data)))
        connection.endheaders(data)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def closed_by_peer(sock: socket.socket) -> bool:
    """Whether the server has closed `sock` (without waiting)."""
    sock.settimeout(0.01)
    try:
        return sock.recv(1 << 16) == b"" or closed_by_peer(sock)
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


def open_after(held: list[socket.socket], seconds: float) -> list[socket.socket]:
    """The sockets of `held` the server has not closed within `seconds`: returns as soon as it
    has closed them all, rather than after the whole wait. Nothing is read while waiting (a
    client that never reads stays one): the wait is for the peer's FIN or reset (POLLRDHUP)."""
    deadline = time.monotonic() + seconds
    pending = {sock.fileno(): sock for sock in held}
    waiting = select.poll()
    for descriptor in pending:
        waiting.register(descriptor, select.POLLRDHUP)
    while pending and (left := deadline - time.monotonic()) > 0:
        for descriptor, _ in waiting.poll(left * 1000):
            waiting.unregister(descriptor)
            del pending[descriptor]
    return [sock for sock in pending.values() if not closed_by_peer(sock)]


def assert_quiet(server: ServeProcess, max_bytes: int, since: int = 0) -> int:
    """The server's stderr from byte `since` on (a shared server's earlier requests have their
    access-log lines): at most `max_bytes`, no traceback; returns its size."""
    size = server.stderr_bytes() - since
    text = server.stderr().encode()[since:].decode(errors="replace")[-20000:]
    assert size <= max_bytes, f"{size} bytes on stderr: {text[-1500:]}"
    assert TRACEBACK.search(text) is None, text[-3000:]
    return size


def accept_queue(port: int) -> int:
    """Connections waiting in the accept queue of the listener on 127.0.0.1:`port` (the
    `rx_queue` of its LISTEN line in /proc/net/tcp)."""
    local = f"0100007F:{port:04X}"
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1] == local and fields[3] == "0A":
            return int(fields[4].split(":")[1], 16)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port}")


def wait_for_accept(port: int, waiting: int = 0, timeout: float = 5) -> None:
    """Wait until at most `waiting` connections wait in the accept queue of the listener on
    127.0.0.1:`port` (the server has taken the others), or `timeout` passes (then what follows
    meets the server as it is: a connection times out, a bound is missed)."""
    deadline = time.monotonic() + timeout
    while accept_queue(port) > waiting and time.monotonic() < deadline:
        time.sleep(0.005)


def paced(port: int, count: int) -> Iterator[int]:
    """`range(count)` for opening that many connections to `port` as fast as its listener takes
    them: every half accept queue, wait until the server has taken all but half a queue. A SYN
    to a full queue is dropped and the client retries 1 s later, so a loop that outran the
    server waited in the kernel, a second each time, while the server idled."""
    for index in range(count):
        if index % (ACCEPT_BACKLOG // 2) == 0:
            wait_for_accept(port, ACCEPT_BACKLOG // 2)
        yield index


def pipelining_non_readers(port: int, count: int, path: str, *, repeat: int = 1500) -> list[socket.socket]:
    """`count` connections without the key, each pipelining `repeat` `GET path` in one write
    with a 4 KiB receive buffer and never reading an answer: each answer's write stalls.
    The caller closes them."""
    pipelined = b"GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % (path.encode(), port) * repeat
    held = []
    try:
        for _ in paced(port, count):
            sock = socket.socket()
            held.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.settimeout(5)
            sock.connect(("127.0.0.1", port))
            sock.setblocking(False)
            try:
                sock.send(pipelined)  # what the buffers take at once: a stalled server reads no more
            except OSError:
                pass  # closed by the bound already
    except BaseException:
        for sock in held:
            sock.close()
        raise
    return held


def settled(pid: int, timeout: float = 20) -> float:
    """Wait until process `pid` is idle (under 5 % of a core over half a second: every
    attacker's answer stalled); returns the seconds waited."""
    started = time.monotonic()
    ticks = os.sysconf("SC_CLK_TCK")

    def cpu() -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / ticks

    before = cpu()
    while time.monotonic() - started < timeout:
        time.sleep(0.5)
        now = cpu()
        if now - before < 0.025:
            break
        before = now
    return time.monotonic() - started


def keyed_seconds(server: ServeProcess) -> float:
    """How long a keyed `GET /v1/models` takes to answer 200 (fails naming what came instead)."""
    started = time.monotonic()
    try:
        status, _, body = request(server, "GET", "/v1/models", timeout=10)
    except (OSError, http.client.HTTPException) as error:
        raise AssertionError(f"the keyed request failed after {time.monotonic() - started:.1f} s: {error!r}") from None
    assert status == 200, (status, body[:300])
    return time.monotonic() - started
