"""Hostile clients of `hostlink serve`: slow and half-sent requests, garbage on the socket.

The error cases of the API itself (oversized and malformed bodies, forged Host/Origin, wrong
keys, disconnects) are in `tests/serve/test_errors.py`; here, connections that never finish
a request must neither block other clients nor leave anything behind.
"""

from __future__ import annotations

import json
import socket
import urllib.request

import pytest

from adversarial.serve_attack import keyed_seconds, paced, pipelining_non_readers, settled
from serve_support import KEY


def models(server) -> dict:
    request = urllib.request.Request(f"{server.base_url}/v1/models", headers={"x-api-key": KEY})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


def test_slow_and_garbage_connections_do_not_block_other_clients(server):
    stuck = []
    try:
        for index in paced(server.port, 50):  # bounded: 50 sockets on 127.0.0.1
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
            if index % 3 == 0:
                sock.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000000\r\n\r\n{")
            elif index % 3 == 1:
                sock.sendall(b"GET /v1/mod")  # headers never finished
            else:
                sock.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(range(256)))  # a TLS hello
            stuck.append(sock)
        assert any(model["id"].endswith("sonnet") for model in models(server)["data"])
    finally:
        for sock in stuck:
            sock.close()
    assert server.claude_pids() == []
    assert any(model["id"].endswith("sonnet") for model in models(server)["data"])


@pytest.mark.serial  # 262 attackers and a 2 s bound: the machine to itself
def test_more_pipelining_clients_than_the_bound_never_lock_out_a_keyed_request(server):
    """Before: 262 connections without the key pipelining `GET /v1/models` and never reading the
    answers held the whole default bound of 256, and a keyed request was reset. After: the
    stalled writers are closed first, and the keyed request answers at once."""
    held = pipelining_non_readers(server.port, 262, "/v1/models")
    try:
        settled(server.process.pid)
        assert keyed_seconds(server) < 2
    finally:
        for sock in held:
            sock.close()
