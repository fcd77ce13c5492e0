"""The connection rules of `hostlink.serve.connections` on a real uvicorn on 127.0.0.1, with an
app that streams an answer bigger than any socket buffer: a client that never reads it stalls
the write, and the answer is never complete. Such a connection is closed at the write deadline,
and it is the first to go when the bound is reached, before older idle connections."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn

from hostlink.serve import connections
from hostlink.serve.connections import bounded_protocol

CHUNK = b"x" * (1024 * 1024)
CHUNKS = 32  # more than the kernel's buffers take for a client that reads nothing


async def big_answer(scope, receive, send) -> None:
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-length", b"%d" % (len(CHUNK) * CHUNKS))]})
    for index in range(CHUNKS):
        await send({"type": "http.response.body", "body": CHUNK, "more_body": index < CHUNKS - 1})


@pytest.fixture
def server() -> Iterator[uvicorn.Server]:
    server = uvicorn.Server(uvicorn.Config(big_answer, host="127.0.0.1", port=0, http=bounded_protocol(4),
                                           log_level="error", lifespan="off"))
    thread = threading.Thread(target=server.run)
    thread.start()
    try:
        while not server.started:
            time.sleep(0.02)
        yield server
    finally:
        server.should_exit = True
        thread.join(30)


def port(server: uvicorn.Server) -> int:
    return server.servers[0].sockets[0].getsockname()[1]


def stalled_client(server: uvicorn.Server) -> socket.socket:
    """A client that asks for the streamed answer and never reads it."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port(server)))
    sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    return sock


def open_on_server(server: uvicorn.Server, sock: socket.socket) -> bool:
    """Whether the server still holds `sock`'s connection (a closed one's unsent answer keeps
    the client from seeing the close until it reads, and reading would let the answer flow)."""
    return any(c.client and c.client[1] == sock.getsockname()[1] for c in list(server.server_state.connections))


def closed_within(server: uvicorn.Server, sock: socket.socket, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while open_on_server(server, sock):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_an_answer_the_client_does_not_take_is_closed_at_the_write_deadline(server, monkeypatch):
    monkeypatch.setattr(connections, "WRITE_SECONDS", 1.0)
    with stalled_client(server) as sock:
        time.sleep(0.5)  # the answer fills the buffers; the client has read nothing
        assert open_on_server(server, sock)
        assert closed_within(server, sock, connections.WRITE_SECONDS + 2)


def test_the_bound_closes_a_stalled_writer_before_older_idle_connections(server):
    """Before: a connection whose answer stalled was "being answered" and out of the bound's
    reach, so a newcomer closed the oldest idle ones instead (or itself)."""
    with stalled_client(server) as stalled:
        time.sleep(0.5)
        idle = [socket.create_connection(("127.0.0.1", port(server))) for _ in range(3)]
        try:
            time.sleep(0.3)
            with socket.create_connection(("127.0.0.1", port(server))) as newcomer:  # the fifth of a bound of 4
                assert closed_within(server, stalled, 3)
                assert all(open_on_server(server, sock) for sock in idle)
                newcomer.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                newcomer.settimeout(10)
                assert newcomer.recv(64).startswith(b"HTTP/1.1 200")  # the newcomer is served
        finally:
            for sock in idle:
                sock.close()


def test_the_connection_bound_follows_the_descriptor_limit(monkeypatch):
    """Unlimited descriptors: the most connections; a limit: what it leaves after each request's
    children and the accept batches, at most the most."""
    monkeypatch.setattr(connections, "descriptor_limit", lambda: None)
    assert connections.connection_bound(4) == connections.MAX_CONNECTIONS
    reserve = (connections.BASE_DESCRIPTORS + connections.ACCEPT_BATCHES_IN_FLIGHT * connections.ACCEPT_BACKLOG
               + connections.DESCRIPTORS_PER_REQUEST * 2 * 4)
    monkeypatch.setattr(connections, "descriptor_limit", lambda: reserve + connections.MIN_CONNECTIONS + 10)
    assert connections.connection_bound(4) == connections.MIN_CONNECTIONS + 10
    monkeypatch.setattr(connections, "descriptor_limit", lambda: 1 << 20)
    assert connections.connection_bound(4) == connections.MAX_CONNECTIONS
