"""What a person is told when revocation at sign-out cannot happen: the authorization server's
metadata fails, is missing or is not metadata, the server cannot be reached, or the stored client
registration cannot authenticate — each a classified sentence, against a real loopback server."""

from __future__ import annotations

import http.server
import json
import threading
from typing import ClassVar

import pytest

from hostlink.mcp.auth.revocation import revoke_tokens
from hostlink.mcp.auth.store import SecureRecord, StoredTokens
from mcp_auth_support import http_server

pytestmark = pytest.mark.anyio


class Answers(http.server.BaseHTTPRequestHandler):
    routes: ClassVar[dict[str, tuple[int, bytes]]] = {}

    def do_GET(self):
        status, body = self.routes.get(self.path, (404, b"not here"))
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def issuer():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answers)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()
    Answers.routes = {}


PUBLIC_CLIENT = {"client_id": "c", "redirect_uris": ["http://127.0.0.1/cb"], "token_endpoint_auth_method": "none"}


def record(issuer, client=PUBLIC_CLIENT):
    return SecureRecord(version=1, server="r", endpoint=f"{issuer}/mcp", issuer=issuer,
                        token_endpoint=f"{issuer}/token", client=client,
                        tokens=StoredTokens(access_token="at-secret", refresh_token="rt-secret"))


async def revoked(issuer, **routes):
    Answers.routes = routes
    return await revoke_tokens(record(issuer), http_server(f"{issuer}/mcp", auth="oauth"))


async def test_metadata_answering_a_server_error_fails_with_its_status(issuer):
    outcome = await revoked(issuer, **{"/.well-known/oauth-authorization-server": (503, b"down")})
    assert (outcome.outcome, outcome.reason) == ("failed", "its metadata answered HTTP 503")
    assert outcome.sentence().endswith("they stay valid until they expire")


async def test_metadata_served_nowhere_means_revocation_is_not_supported(issuer):
    outcome = await revoked(issuer)
    assert outcome.outcome == "unsupported"
    assert outcome.sentence() == ("the authorization server does not support token revocation, "
                                  "so its tokens stay valid until they expire")


async def test_metadata_that_is_not_metadata_fails_without_quoting_it(issuer):
    outcome = await revoked(issuer, **{"/.well-known/oauth-authorization-server": (200, b'{"issuer": "<script>"}')})
    assert (outcome.outcome, outcome.reason) == ("failed", "its metadata is not valid authorization server metadata")


async def test_an_issuer_that_cannot_be_reached_fails_by_the_kind_of_error():
    listener = http.server.HTTPServer(("127.0.0.1", 0), Answers)
    address = f"http://127.0.0.1:{listener.server_address[1]}"
    listener.server_close()  # nothing listens there any more
    outcome = await revoke_tokens(record(address), http_server(f"{address}/mcp", auth="oauth"))
    assert (outcome.outcome, outcome.reason) == (
        "failed", "the authorization server could not be reached (ConnectError)")


async def test_a_registration_that_cannot_authenticate_fails_and_names_no_token(issuer):
    metadata = {"issuer": issuer, "authorization_endpoint": f"{issuer}/authorize", "token_endpoint": f"{issuer}/token",
                "response_types_supported": ["code"], "revocation_endpoint": f"{issuer}/revoke"}
    Answers.routes = {"/.well-known/oauth-authorization-server": (200, json.dumps(metadata).encode())}
    outcome = await revoke_tokens(record(issuer, client={"client_id": 5}), http_server(f"{issuer}/mcp", auth="oauth"))
    assert (outcome.outcome, outcome.reason) == (
        "failed", "the stored client registration cannot authenticate a revocation")
    assert "secret" not in outcome.sentence()
