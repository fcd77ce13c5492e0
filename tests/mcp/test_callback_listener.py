"""The loopback listener for the OAuth callback: a port already taken is a clear error, closing
the hub closes its listeners, and its own guard refuses a redirect URI it must never bind."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

import anyio
import pytest

from hostlink.mcp.auth.callback import CallbackHub, parse_redirect_uri
from hostlink.mcp.errors import AuthError

pytestmark = pytest.mark.anyio


async def test_a_port_already_taken_is_a_clear_error():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        hub = CallbackHub()
        with pytest.raises(AuthError, match=rf"^cannot listen for the authorization callback on "
                                            rf"http://127\.0\.0\.1:{port}$"):
            await hub.open_flow(f"http://127.0.0.1:{port}/callback")
        assert hub.listening == 0


async def test_closing_the_hub_stops_its_listeners():
    hub = CallbackHub()
    flow = await hub.open_flow(None)
    port = urlsplit(flow.redirect_uri).port
    await (await anyio.connect_tcp("127.0.0.1", port)).aclose()  # listening
    hub.close()
    with anyio.fail_after(5):
        while True:
            try:
                stream = await anyio.connect_tcp("127.0.0.1", port)
            except OSError:
                break  # refused: nothing listens any more
            await stream.aclose()
            await anyio.sleep(0.02)


@pytest.mark.parametrize("uri", ["http://localhost:8080/cb", "http://127.0.0.1/cb", "https://127.0.0.1:8080/cb",
                                 "http://127.0.0.1:8080/cb?x=1", "http://10.0.0.1:8080/cb"])
def test_the_listener_never_binds_what_is_not_loopback_http_with_a_port(uri):
    with pytest.raises(AuthError, match=r"^oauth\.redirectUri must be http://127\.0\.0\.1:PORT/PATH or "):
        parse_redirect_uri(uri)
