"""private_key_jwt client authentication (RFC 7523) for machine OAuth (`oauth.clientAssertion`).

The PEM private key is read from the configured environment variable at connect time and is
held only by that connection's auth, in memory: never in the keyring, never in a file, and no
message shows more of it than the variable's name. The SDK runs the flow (the assertion's
audience is the authorization server's issuer, and it is minted only once metadata for the
configured issuer was found); this module checks the key fits `alg` before anything is sent
and signs each assertion — itself, because the SDK's signer cannot set the `kid` header.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any

from hostlink.mcp.errors import AuthError

ASSERTION_LIFETIME_SECONDS = 300  # short: an assertion is one token request's proof


def load_signing_key(pem: str, alg: str, variable: str) -> Any:
    """The private key in `pem` when it suits `alg`; AuthError naming only `variable`."""
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        key = load_pem_private_key(pem.encode("utf-8", "replace"), password=None)
    except TypeError:  # a passphrase-protected key
        raise AuthError(f"the private key in the environment variable {variable} is encrypted; "
                        "clientAssertion needs an unencrypted PEM key") from None
    except (ValueError, UnsupportedAlgorithm):
        raise AuthError(f"the environment variable {variable} does not hold a PEM private key") from None
    if alg == "RS256" and not (isinstance(key, rsa.RSAPrivateKey) and key.key_size >= 2048):
        raise AuthError(f"the private key in the environment variable {variable} is not an RSA key of at "
                        "least 2048 bits, which clientAssertion.alg RS256 needs")
    if alg == "ES256" and not (isinstance(key, ec.EllipticCurvePrivateKey) and isinstance(key.curve, ec.SECP256R1)):
        raise AuthError(f"the private key in the environment variable {variable} is not a P-256 EC key, "
                        "which clientAssertion.alg ES256 needs")
    return key


def assertion_signer(client_id: str, key: Any, alg: str, kid: str | None) -> Callable[[str], Awaitable[str]]:
    """The SDK's `assertion_provider`: a fresh signed assertion for `audience` each time."""
    import jwt

    headers = {"kid": kid} if kid is not None else None

    async def sign(audience: str) -> str:
        now = int(time.time())
        claims = {"iss": client_id, "sub": client_id, "aud": audience, "iat": now,
                  "exp": now + ASSERTION_LIFETIME_SECONDS, "jti": secrets.token_urlsafe(16)}
        return jwt.encode(claims, key, algorithm=alg, headers=headers)

    return sign
