"""Compressed response bodies through the SafeTransport in process: gzip, deflate with and
without its zlib wrapper (servers send both), a body that is not what it says, and one that
inflates past the bound. Each body comes in small pieces, as from a network."""

from __future__ import annotations

import gzip
import zlib

import anyio
import httpx2
import pytest

from hostlink.mcp.transports.http import ResponseTooLarge, SafeTransport

TEXT = b'{"jsonrpc": "2.0", "id": 1, "result": {"text": "' + b"weather " * 20000 + b'"}}'


def _raw_deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    return compressor.compress(data) + compressor.flush()


def _read(body: bytes, encoding: str, limit: int = 1024 * 1024, piece: int = 7) -> bytes:
    async def pieces():
        for start in range(0, len(body), piece):
            yield body[start:start + piece]

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"Content-Encoding": encoding}, content=pieces())

    async def get() -> bytes:
        transport = SafeTransport(limit)
        transport._inner = httpx2.MockTransport(answer)  # the network: bytes as a server sent them
        async with httpx2.AsyncClient(transport=transport) as client:
            response = await client.get("https://mcp.example.com/mcp")
            return response.content

    return anyio.run(get)


@pytest.mark.parametrize(("encoding", "body"), [
    ("gzip", gzip.compress(TEXT)), ("x-gzip", gzip.compress(TEXT)), ("deflate", zlib.compress(TEXT)),
    ("deflate", _raw_deflate(TEXT)),
])
def test_a_compressed_body_reads_as_the_server_wrote_it(encoding, body):
    assert _read(body, encoding) == TEXT


def test_output_zlib_holds_back_after_the_last_piece_is_read_too():
    """A raw deflate stream has no trailer: its last piece can be taken in whole while a step
    of output is full and a byte is still held back. The end of the body flushes it."""
    body = b" " * 65_537
    assert _read(_raw_deflate(body), "deflate", piece=len(body)) == body


@pytest.mark.parametrize(("encoding", "body"), [
    ("gzip", b"this is not gzip at all"), ("deflate", zlib.compress(TEXT)[:40] + b"\xff" * 40),
])
def test_a_body_that_is_not_valid_compressed_data_is_an_error_saying_so(encoding, body):
    with pytest.raises(httpx2.DecodingError, match=r"^the response body is not valid compressed data$"):
        _read(body, encoding)


def test_a_body_that_inflates_past_the_bound_is_refused():
    with pytest.raises(ResponseTooLarge, match=r"^a response exceeded 0 MiB once decoded; it was not read further$"):
        _read(gzip.compress(TEXT), "gzip", limit=1000)
