"""The auth manager for servers that do not sign in by link: a server without auth gets no
credentials and its status says so; asking it for a sign-in link is refused with the reason;
signing out of one with a bearer token from the environment or machine OAuth touches nothing and
reports nothing to revoke."""

from __future__ import annotations

import pytest

from hostlink.mcp.auth.manager import AuthManager
from mcp_auth_support import http_server

pytestmark = pytest.mark.anyio


async def test_a_server_without_auth_gets_no_credentials_and_says_so():
    manager, server = AuthManager(environ={}), http_server("https://mcp.example.com/mcp")
    try:
        assert await manager.http_auth("plain", server) is None
        assert await manager.credential_state("plain", server) == "no authentication"
    finally:
        await manager.aclose()


@pytest.mark.parametrize("fields", [
    {"auth": "bearer", "bearerTokenEnv": "MY_TOKEN"},
    {"auth": "oauth", "oauth": {"grantType": "client_credentials", "clientId": "c", "clientSecretEnv": "MY_SECRET",
                         "issuer": "https://auth.example.com"}},
])
async def test_signing_out_of_a_server_with_credentials_from_the_environment_has_nothing_to_revoke(fields):
    manager = AuthManager(environ={"MY_TOKEN": "t", "MY_SECRET": "s"})
    try:
        assert await manager.logout("env", http_server("https://mcp.example.com/mcp", **fields)) is None
    finally:
        await manager.aclose()


@pytest.mark.parametrize(("fields", "reason"), [
    ({}, "has no \"auth\" configured; there is no sign-in for it"),
    ({"auth": "bearer", "bearerTokenEnv": "MY_TOKEN"},
     "does not sign in with a link; its bearer token comes from the environment variable MY_TOKEN"),
])
async def test_a_server_without_a_sign_in_by_link_refuses_to_start_one(fields, reason):
    from hostlink.mcp.errors import AuthError

    manager = AuthManager(environ={})
    try:
        with pytest.raises(AuthError) as raised:
            await manager.start_login("env", http_server("https://mcp.example.com/mcp", **fields))
        assert str(raised.value) == f"MCP server 'env' {reason}"
        assert manager._hub.listening == 0  # nothing started: no callback listener
    finally:
        await manager.aclose()
