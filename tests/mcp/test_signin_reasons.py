"""The reason a failed sign-in gives a person (latched, and told with the retry advice): the
SDK's registration and flow failures bounded to one line, an unreachable server by the kind of
error, anything else by its type only — never its text, which may carry a secret."""

from __future__ import annotations

import httpx2
import pytest
from mcp.client.auth import OAuthFlowError, OAuthRegistrationError

from hostlink.mcp.auth.signin import _describe
from hostlink.mcp.errors import AuthError


@pytest.mark.parametrize(("error", "reason"), [
    (AuthError("the sign-in timed out"), "the sign-in timed out"),
    (OAuthRegistrationError("Registration failed: 400\n\x1b[31minvalid_redirect_uri"),
     "client registration failed: Registration failed: 400 invalid_redirect_uri"),
    (OAuthFlowError("state mismatch"), "the authorization flow failed: state mismatch"),
    (httpx2.ConnectError("[Errno 111] Connection refused"),
     "the server or its authorization server could not be reached (ConnectError)"),
    (KeyError("refresh_token=rt-secret"), "unexpected failure (KeyError)"),
])
def test_a_failed_sign_in_is_told_in_one_safe_line(error, reason):
    assert _describe(error) == reason


@pytest.mark.anyio
async def test_once_the_callback_is_in_only_the_code_exchange_may_leave():
    from hostlink.mcp.auth.signin import _ExchangeGuard

    guard = _ExchangeGuard("http://127.0.0.1:9/mcp", None)
    guard.arm()
    with pytest.raises(AuthError) as raised:
        await guard.handle_async_request(httpx2.Request("GET", "http://127.0.0.1:9/.well-known/openid-configuration"))
    assert str(raised.value) == "the sign-in tried a request other than the single code exchange"
    assert not guard.exchanged  # refused before anything was sent: the exchange is still to come
    await guard.aclose()


def test_the_sdk_auth_log_keeps_its_notes_but_never_a_failure_s_text(caplog):
    import logging

    from hostlink.mcp.auth.oauth import quiet_sdk_auth_log

    quiet_sdk_auth_log()
    quiet_sdk_auth_log()  # once per logger, however many sign-ins set it up
    logger = logging.getLogger("mcp.client.auth.oauth2")
    with caplog.at_level(logging.DEBUG, logger="mcp.client.auth.oauth2"):
        logger.info("discovered metadata at %s", "http://127.0.0.1:9/.well-known/oauth-authorization-server")
        logger.error("token exchange failed: %s", "refresh_token=rt-secret")
        try:
            raise ValueError("access_token=at-secret")
        except ValueError:
            logger.warning("retrying", exc_info=True)
    assert [record.getMessage() for record in caplog.records] == [
        "discovered metadata at http://127.0.0.1:9/.well-known/oauth-authorization-server",
        "OAuth flow error (see hostlink's message)", "OAuth flow error (see hostlink's message)"]
    assert "secret" not in caplog.text
    assert sum(type(f).__name__ == "_WithholdSdkErrorText" for f in logger.filters) == 1
