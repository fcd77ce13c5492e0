"""Token revocation at sign-out (RFC 7009), so a sign-out also ends the tokens' life at the
authorization server, not only on this machine.

It runs after the keyring record is gone (confirmed), on the copy read just before, so the
local removal never depends on it. The authorization server's metadata is fetched from the
record's bound issuer and must name that issuer; when it has a `revocation_endpoint`, the
refresh token then the access token are revoked there, authenticated as the client's
registration says. Every request goes through the SafeTransport (https, http only on
loopback; bounded answers), follows no redirect, and the whole of it is bounded by
`REVOCATION_SECONDS`. The outcome is told to the person: revoked, not supported, or
failed (with a classified reason, never provider text or a token).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import anyio
import httpx2

from hostlink.mcp.auth.oauth import MAX_RESPONSE_BYTES, classify_failure, client_authenticated
from hostlink.mcp.auth.store import same_issuer
from hostlink.mcp.errors import McpError
from hostlink.mcp.transports.http import SafeTransport

if TYPE_CHECKING:
    from hostlink.mcp.auth.store import SecureRecord
    from hostlink.mcp.config.schema import HttpServer

REVOCATION_SECONDS = 5.0  # the whole revocation: discovery and both requests


@dataclass(frozen=True)
class Revocation:
    """What became of the tokens at the authorization server; `reason` says why one failed."""

    outcome: Literal["revoked", "unsupported", "failed"]
    reason: str = ""

    def sentence(self) -> str:
        if self.outcome == "revoked":
            return "the authorization server revoked its tokens"
        if self.outcome == "unsupported":
            return ("the authorization server does not support token revocation, "
                    "so its tokens stay valid until they expire")
        return f"the authorization server did not revoke its tokens: {self.reason}; they stay valid until they expire"


class _Failed(Exception):
    """One step failed; the message is a classified reason."""


async def revoke_tokens(record: SecureRecord, server: HttpServer) -> Revocation | None:
    """Revoke the record's tokens at its authorization server; None when it holds none."""
    tokens = record.tokens
    if tokens is None:
        return None
    pending = [(token, hint) for token, hint in ((tokens.refresh_token, "refresh_token"),
                                                  (tokens.access_token, "access_token")) if token]
    try:
        with anyio.fail_after(REVOCATION_SECONDS):
            async with httpx2.AsyncClient(transport=SafeTransport(MAX_RESPONSE_BYTES),
                                          timeout=REVOCATION_SECONDS) as http:
                endpoint = await _revocation_endpoint(http, record, server)
                if endpoint is None:
                    return Revocation("unsupported")
                for token, hint in pending:
                    await _revoke(http, endpoint, record, server, token, hint)
    except TimeoutError:
        return Revocation("failed", f"no answer within {REVOCATION_SECONDS:g} s")
    except _Failed as failed:
        return Revocation("failed", str(failed))
    except McpError as refused:  # the SafeTransport refused a URL or an answer: fixed text
        return Revocation("failed", str(refused))
    except httpx2.HTTPError as error:
        return Revocation("failed", f"the authorization server could not be reached ({type(error).__name__})")
    return Revocation("revoked")


async def _revocation_endpoint(http: httpx2.AsyncClient, record: SecureRecord, server: HttpServer) -> str | None:
    """The issuer's `revocation_endpoint`; None when its metadata has none (or there is none)."""
    from mcp.client.auth.utils import build_oauth_authorization_server_metadata_discovery_urls
    from mcp.shared.auth import OAuthMetadata
    from pydantic import ValidationError

    for url in build_oauth_authorization_server_metadata_discovery_urls(record.issuer, server.url):
        answer = await http.get(url)
        if answer.status_code >= 500:
            raise _Failed(f"its metadata answered HTTP {answer.status_code}")
        if answer.status_code != 200:
            continue  # not served here: the next well-known location
        try:
            metadata = OAuthMetadata.model_validate_json(answer.content)
        except ValidationError:
            raise _Failed("its metadata is not valid authorization server metadata") from None
        if not same_issuer(str(metadata.issuer), record.issuer):
            raise _Failed("its metadata names another issuer than the one that issued the tokens")
        return str(metadata.revocation_endpoint) if metadata.revocation_endpoint else None
    return None


async def _revoke(http: httpx2.AsyncClient, endpoint: str, record: SecureRecord, server: HttpServer,
                  token: str, hint: str) -> None:
    from mcp.client.auth import OAuthTokenError
    from mcp.shared.auth import OAuthClientInformationFull
    from pydantic import ValidationError

    try:
        client = OAuthClientInformationFull.model_validate(record.client)
        data, headers = client_authenticated(server.url, client, {"token": token, "token_type_hint": hint})
    except (ValidationError, OAuthTokenError):
        raise _Failed("the stored client registration cannot authenticate a revocation") from None
    answer = await http.post(endpoint, data=data, headers=headers)
    if answer.status_code != 200:  # RFC 7009 §2.2: 200 whether or not the token was still valid
        raise _Failed(classify_failure(f"revoking the {hint.replace('_', ' ')}", answer.status_code, answer.content))
