"""OAuth pieces shared by the AuthManager and the sign-in: answers classified, the SDK's
token storage in memory, the SDK's log kept free of provider text, a server's OAuth settings."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from hostlink.host.output import strip_controls
from hostlink.mcp.auth.store import StoredTokens
from hostlink.mcp.config.schema import OAuthSettings

if TYPE_CHECKING:
    from hostlink.mcp.config.schema import HttpServer

MAX_RESPONSE_BYTES = 1024 * 1024
MAX_DETAIL_CHARS = 300
KNOWN_TOKEN_ERRORS = frozenset(
    {
        "invalid_request",
        "invalid_client",
        "invalid_grant",
        "unauthorized_client",
        "unsupported_grant_type",
        "invalid_scope",
        "invalid_target",
        "access_denied",
        "server_error",
        "temporarily_unavailable",
        "invalid_redirect_uri",
        "invalid_client_metadata",
        "invalid_software_statement",
        "unapproved_software_statement",
        "unsupported_token_type",
    }
)


class _WithholdSdkErrorText(logging.Filter):
    """The SDK logs OAuth flow failures with their full text, which can carry provider-supplied
    values; hostlink reports every failure itself, classified and bounded, so the SDK's log
    record keeps only a fixed line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info or record.levelno >= logging.ERROR:
            record.msg, record.args = "OAuth flow error (see hostlink's message)", ()
            record.exc_info, record.exc_text = None, None
        return True


def quiet_sdk_auth_log() -> None:
    logger = logging.getLogger("mcp.client.auth.oauth2")
    if not any(isinstance(f, _WithholdSdkErrorText) for f in logger.filters):
        logger.addFilter(_WithholdSdkErrorText())


def bounded_detail(text: str) -> str:
    """Provider- or SDK-supplied text made safe for a message: no controls, one line, bounded."""
    clean = " ".join(strip_controls(text).split())
    return clean if len(clean) <= MAX_DETAIL_CHARS else clean[:MAX_DETAIL_CHARS] + "…"


def oauth_error_code(body: bytes) -> str | None:
    """The `error` of an OAuth error answer when it is a known code, else None."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    code = data.get("error") if isinstance(data, dict) else None
    return code if code in KNOWN_TOKEN_ERRORS else None


def classify_failure(what: str, status: int, body: bytes) -> str:
    """A failed OAuth endpoint answer as a local message: a known error code and the status."""
    code = oauth_error_code(body)
    shown = str(status) if 100 <= status <= 599 else "unexpected"
    return f"{what} failed (HTTP {shown}{', ' + code if code else ''})"


def stored_tokens(token: Any, prior: StoredTokens | None = None) -> StoredTokens:
    from mcp.shared.auth_utils import calculate_token_expiry

    return StoredTokens(
        access_token=token.access_token,
        token_type=token.token_type,
        refresh_token=token.refresh_token or (prior.refresh_token if prior else None),
        scope=token.scope or (prior.scope if prior else None),
        expires_at=calculate_token_expiry(token.expires_in) if token.expires_in is not None else None,
    )


def client_authenticated(server_url: str, client: Any, data: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """Form `data` plus `client_id`, and headers, authenticating `client` at a token-style
    endpoint (refresh, revocation) the way its registration says, by the SDK's rules."""
    from mcp.client.auth.oauth2 import OAuthContext
    from mcp.shared.auth import OAuthClientMetadata

    context = OAuthContext(server_url, OAuthClientMetadata(redirect_uris=None), MemoryStorage(), None, None,
                           client_info=client)
    return context.prepare_token_auth({**data, "client_id": client.client_id},
                                      {"Content-Type": "application/x-www-form-urlencoded"})


class MemoryStorage:
    """The SDK's TokenStorage held in memory: machine tokens, or a sign-in's staging area."""

    def __init__(self, client_info: Any = None) -> None:
        self.client_info = client_info
        self.tokens: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client_info

    async def set_client_info(self, client_info: Any) -> None:
        self.client_info = client_info


def oauth_settings(server: HttpServer) -> OAuthSettings:
    return server.oauth or OAuthSettings()
