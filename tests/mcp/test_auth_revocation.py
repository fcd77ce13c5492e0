"""Token revocation at sign-out (RFC 7009) against the fake authorization server and a real
keyring: revoked, not supported, failing (500, hanging past the bound, a refused URL, metadata
for another issuer) — and in every case the keyring record is gone.
"""

from __future__ import annotations

import time

import httpx2
import pytest

import hostlink.mcp.auth.revocation as revocation
from hostlink.mcp.auth.manager import AuthManager
from hostlink.mcp.auth.revocation import Revocation
from hostlink.mcp.auth.store import SecureStore, record_key
from mcp_auth_support import http_server, sign_in

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("keyring_required", "no_browser", "isolated_state")]


async def signed_in(fake_oauth, name: str = "r"):
    server = http_server(fake_oauth.mcp, auth="oauth")
    manager = AuthManager()
    await sign_in(manager, name, server)
    record = await SecureStore().load(record_key(name, server), name, server)
    assert record is not None and record.tokens is not None and record.tokens.refresh_token
    return manager, server, record.tokens


async def gone(name: str, server) -> bool:
    return await SecureStore().read_raw(record_key(name, server)) is None


async def accepted(fake_oauth, access_token: str) -> bool:
    """Whether the MCP server still takes `access_token`."""
    async with httpx2.AsyncClient() as client:
        answer = await client.post(fake_oauth.mcp, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                   headers={"Authorization": f"Bearer {access_token}",
                                            "Accept": "application/json, text/event-stream"})
    return answer.status_code != 401


async def test_sign_out_revokes_the_refresh_then_the_access_token(fake_oauth):
    manager, server, tokens = await signed_in(fake_oauth)
    assert await accepted(fake_oauth, tokens.access_token)
    assert await manager.logout("r", server) == Revocation("revoked")
    assert fake_oauth.counters()["revoked"] == ["refresh_token", "access_token"]
    assert await gone("r", server)
    assert not await accepted(fake_oauth, tokens.access_token)
    async with httpx2.AsyncClient() as client:
        refresh = await client.post(f"{fake_oauth.issuer}/token", data={
            "grant_type": "refresh_token", "refresh_token": tokens.refresh_token, "client_id": "any"})
    assert refresh.json()["error"] == "invalid_grant"
    assert await manager.logout("r", server) is None  # nothing left to revoke
    await manager.aclose()


async def test_without_a_revocation_endpoint_the_tokens_are_only_removed_here(fake_oauth):
    manager, server, _tokens = await signed_in(fake_oauth)
    fake_oauth.control(revocation="none")
    result = await manager.logout("r", server)
    assert result == Revocation("unsupported")
    assert result.sentence() == ("the authorization server does not support token revocation, "
                                 "so its tokens stay valid until they expire")
    assert await gone("r", server) and fake_oauth.counters()["revoked"] == []
    await manager.aclose()


async def test_a_failing_endpoint_is_reported_classified_and_the_record_is_still_gone(fake_oauth):
    manager, server, _ = await signed_in(fake_oauth)
    fake_oauth.control(revocation="error")
    result = await manager.logout("r", server)
    assert result == Revocation("failed", "revoking the refresh token failed (HTTP 500, server_error)")
    assert "HOSTILE" not in result.sentence() and "\x1b" not in result.sentence()
    assert await gone("r", server)
    await manager.aclose()


async def test_a_hanging_endpoint_is_bounded(fake_oauth, monkeypatch):
    manager, server, _ = await signed_in(fake_oauth)
    fake_oauth.control(revocation="hang")
    monkeypatch.setattr(revocation, "REVOCATION_SECONDS", 1.0)
    started = time.monotonic()
    assert await manager.logout("r", server) == Revocation("failed", "no answer within 1 s")
    assert time.monotonic() - started < 5
    assert await gone("r", server)
    await manager.aclose()


async def test_a_cleartext_endpoint_is_refused_before_anything_is_sent(fake_oauth):
    manager, server, tokens = await signed_in(fake_oauth)
    fake_oauth.control(revocation="cleartext")
    result = await manager.logout("r", server)
    assert result.outcome == "failed" and "refused before it was sent" in result.reason
    assert "http is only allowed on a loopback host" in result.reason
    assert tokens.refresh_token not in result.sentence() and "revoke.example" not in result.sentence()
    assert await gone("r", server)
    await manager.aclose()


async def test_metadata_for_another_issuer_is_not_trusted_with_the_tokens(fake_oauth):
    manager, server, _ = await signed_in(fake_oauth)
    fake_oauth.control(metadata_issuer="http://127.0.0.1:9")
    result = await manager.logout("r", server)
    assert result == Revocation("failed", "its metadata names another issuer than the one that issued the tokens")
    assert fake_oauth.counters()["revoked"] == [] and await gone("r", server)
    await manager.aclose()
