"""Machine OAuth with private_key_jwt (RFC 7523) against the fake authorization server, which
checks every assertion with the public key: signature, audience, issuer, subject, kid, one use.

Real keys (`cryptography`), real HTTP on 127.0.0.1, the SDK's flow; the private key only
ever lives in the environment mapping handed to the AuthManager.
"""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from hostlink.mcp.auth.manager import AuthManager
from hostlink.mcp.auth.store import SecureStore, record_key
from hostlink.mcp.errors import AuthError, AuthRequired, McpError
from hostlink.mcp.runtime.clients import McpRuntime
from mcp_auth_support import http_server

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("keyring_required", "no_browser", "isolated_state")]


def key_pair(alg: str, *, password: bytes | None = None) -> tuple[str, str]:
    """(private PEM, public PEM) of a fresh key for `alg`."""
    key = ec.generate_private_key(ec.SECP256R1()) if alg == "ES256" else rsa.generate_private_key(65537, 2048)
    encryption = (serialization.BestAvailableEncryption(password) if password
                  else serialization.NoEncryption())
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return private.decode(), public.decode()


def jwt_server(fake_oauth, alg: str, kid: str | None = None):
    assertion = {"keyEnv": "M_KEY", "alg": alg, **({"kid": kid} if kid else {})}
    return http_server(fake_oauth.mcp, auth="oauth", oauth={
        "grantType": "client_credentials", "clientId": "jwt-machine", "issuer": fake_oauth.issuer,
        "clientAssertion": assertion})


async def whoami(manager: AuthManager, server) -> str:
    runtime = McpRuntime({"m": server}, auth=manager)
    try:
        result = await runtime.call_tool("m", "whoami", {})
        return result.content[0].text
    finally:
        await runtime.aclose()


@pytest.mark.parametrize(("alg", "kid"), [("ES256", "key-2026"), ("RS256", None)])
async def test_a_signed_assertion_gets_a_token_and_nothing_is_stored(fake_oauth, tmp_path, alg, kid):
    private, public = key_pair(alg)
    fake_oauth.control(assertion_key=public, assertion_alg=alg, assertion_kid=kid)
    server = jwt_server(fake_oauth, alg, kid)
    manager = AuthManager(environ={"M_KEY": private})
    assert await manager.credential_state("m", server) == "env set: M_KEY"
    assert await whoami(manager, server) == "client jwt-machine"
    counters = fake_oauth.counters()
    assert counters["token_client_assertion"] == 1 and counters["token_failed"] == 0
    assert counters["register"] == counters["authorize"] == counters["token_client_credentials"] == 0
    assert await SecureStore().read_raw(record_key("m", server)) is None
    body = "".join(private.splitlines()[1:-1])[:40]
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert body not in path.read_text(errors="replace"), path
    await manager.aclose()


async def test_a_key_the_server_does_not_know_is_refused_without_showing_it(fake_oauth):
    _, public = key_pair("ES256")
    other, _ = key_pair("ES256")
    fake_oauth.control(assertion_key=public, assertion_alg="ES256")
    manager = AuthManager(environ={"M_KEY": other})
    with pytest.raises(McpError) as raised:
        await whoami(manager, jwt_server(fake_oauth, "ES256"))
    assert "PRIVATE KEY" not in str(raised.value) and other.splitlines()[1] not in str(raised.value)
    assert fake_oauth.counters()["token_client_assertion"] == 1  # tried once, refused, not retried
    await manager.aclose()


async def test_a_kid_other_than_the_servers_is_refused(fake_oauth):
    private, public = key_pair("ES256")
    fake_oauth.control(assertion_key=public, assertion_alg="ES256", assertion_kid="expected")
    manager = AuthManager(environ={"M_KEY": private})
    with pytest.raises(McpError):
        await whoami(manager, jwt_server(fake_oauth, "ES256", "other"))
    assert fake_oauth.counters()["token_failed"] == 1
    await manager.aclose()


def _garbage() -> str:
    return "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWJ1dC1ub3QtYS1rZXk=\n-----END PRIVATE KEY-----\n"


@pytest.mark.parametrize(("make", "alg", "problem"), [
    (lambda: "not a key at all: s3cret", "ES256", "does not hold a PEM private key"),
    (_garbage, "ES256", "does not hold a PEM private key"),
    (lambda: key_pair("RS256")[0], "ES256", "is not a P-256 EC key, which clientAssertion.alg ES256 needs"),
    (lambda: key_pair("ES256")[0], "RS256", "is not an RSA key of at least 2048 bits"),
    (lambda: key_pair("ES256", password=b"pw")[0], "ES256", "is encrypted"),
])
async def test_unusable_key_material_fails_closed_before_any_request(fake_oauth, make, alg, problem):
    material = make()
    manager = AuthManager(environ={"M_KEY": material})
    with pytest.raises(AuthError) as raised:
        await manager.http_auth("m", jwt_server(fake_oauth, alg))
    message = str(raised.value)
    assert problem in message and "M_KEY" in message
    assert all(line not in message for line in material.splitlines() if len(line) > 8)
    assert fake_oauth.counters()["metadata"] == 0
    await manager.aclose()


async def test_a_missing_key_variable_names_it(fake_oauth):
    manager = AuthManager(environ={})
    server = jwt_server(fake_oauth, "ES256")
    assert await manager.credential_state("m", server) == "env missing: M_KEY"
    with pytest.raises(AuthRequired, match="needs a private key: set the environment variable M_KEY"):
        await manager.http_auth("m", server)
    await manager.aclose()
