"""What the SafeTransport refuses in a server's answer before reading it: a content encoding it
does not decode, a challenge naming resource metadata that is not a URL. In process: the network
is httpx's mock transport answering as such a server would (as in test_http_bodies.py)."""

from __future__ import annotations

import anyio
import httpx2
import pytest

from hostlink.mcp.errors import McpError
from hostlink.mcp.transports.http import SafeTransport


def get(status: int, headers: dict[str, str]) -> httpx2.Response:
    async def body():
        yield b"\x00" * 64

    async def run() -> httpx2.Response:
        response = httpx2.Response(status, headers=headers, content=body())
        transport = SafeTransport(1024 * 1024)
        transport._inner = httpx2.MockTransport(lambda request: response)
        async with httpx2.AsyncClient(transport=transport) as client:
            answer = await client.get("https://mcp.example.com/mcp")
            await answer.aread()
            return answer

    return anyio.run(run)


@pytest.mark.parametrize("encoding", ["br", "gzip, gzip", "zstd"])
def test_an_encoding_other_than_one_gzip_or_deflate_is_not_read(encoding):
    with pytest.raises(McpError, match=r"^a response used a content encoding other than gzip or deflate; "
                                       r"it was not read$"):
        get(200, {"Content-Encoding": encoding})


def test_a_challenge_naming_metadata_that_is_not_a_url_is_refused():
    challenge = 'Bearer resource_metadata="http://[::1/.well-known/oauth-protected-resource"'
    with pytest.raises(McpError, match=r"^a challenge named invalid resource metadata; it was refused$"):
        get(401, {"WWW-Authenticate": challenge})
