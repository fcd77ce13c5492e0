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
