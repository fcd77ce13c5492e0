"""Authentication policy for Streamable HTTP MCP servers.

The SDK does the OAuth protocol (discovery, PKCE S256, client registration, issuer checks,
token validation); hostlink decides what is allowed around it:

- `bearer`: the token comes from the environment variable `bearerTokenEnv`.
- `client_credentials`: client id and exact issuer from config, secret from the
  environment at connect time, tokens in memory only; nothing is stored or linked.
- `authorization_code`: without stored tokens, a sign-in by link starts in the background
  (`hostlink.mcp.auth.signin`). The connection itself only ever gets a narrow bearer auth,
  never the interactive provider.

Tokens accepted from a sign-in or a refresh are written to the keyring and read back under
the cross-process credential lock first. Sign-out bumps an account generation that voids
every sign-in, callback and cached token that predates it.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING

import httpx2

from hostlink.mcp.auth.oauth import (
    MAX_RESPONSE_BYTES,
    MemoryStorage,
    classify_failure,
    client_authenticated,
    oauth_error_code,
    oauth_settings,
    stored_tokens,
)
from hostlink.mcp.auth.revocation import Revocation, revoke_tokens
from hostlink.mcp.auth.signin import SignIns
from hostlink.mcp.auth.store import (
    SecureRecord,
    SecureStore,
    StoredTokens,
    StoreError,
    credential_lock,
    expired,
    record_key,
    stored_state,
)
from hostlink.mcp.errors import AuthError, AuthRequired
from hostlink.mcp.transports.http import SafeTransport, challenge_of

if TYPE_CHECKING:
    from hostlink.host import Notifier
    from hostlink.mcp.config.schema import HttpServer, OAuthSettings

class _StaticBearer(httpx2.Auth):
    def __init__(self, token: str) -> None:
        self._header = f"Bearer {token}"

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        request.headers["Authorization"] = self._header
        yield request


class _RecordAuth(httpx2.Auth):
    """The narrow auth a connection gets: a stored bearer token, refreshed when it expires.

    `anonymous` is for a server that let the sign-in probe through without credentials.
    A challenge from the server (401, or 403 for more scope) starts a sign-in in the
    background; the request itself fails and is not repeated.
    """

    def __init__(self, manager: AuthManager, key: str, name: str, server: HttpServer, generation: int,
                 anonymous: bool = False) -> None:
        self._manager, self._key, self._name, self._server, self._generation = manager, key, name, server, generation
        self._anonymous = anonymous

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        if not self._anonymous:
            token = await self._manager._access_token(self._key, self._name, self._server, self._generation)
            request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        challenge = challenge_of(response)
        if challenge is not None:
            self._manager._challenged(self._key, self._name, self._server, challenge)


class AuthManager:
    """Credentials of every HTTP server of one host session (see the module docstring).

    `notifier` (the host session's) hears when a background sign-in that issued a link ends;
    `on_signed_in(name)` runs after a sign-in's tokens are stored (the host resets a setup
    that had failed for want of them). `command` is how a person runs this host's commands
    (`hostlink`, `llm`): advice in messages names it. `links=False` is for a one-shot
    session, which ends before a browser could come back: a missing sign-in names the
    command that signs in instead of handing out a link nobody waits for.
    """

    def __init__(self, environ: Mapping[str, str] | None = None, *, notifier: Notifier | None = None,
                 on_signed_in: Callable[[str], Awaitable[None]] | None = None, command: str = "hostlink",
                 links: bool = True) -> None:
        self._environ = os.environ if environ is None else environ
        self._command = command
        self._links = links
        self._store = SecureStore()
        self._generation: dict[str, int] = {}
        self._tokens: dict[str, StoredTokens] = {}
        self._signins = SignIns(self._store, self._generation, self._tokens, self._env, command=command,
                                notifier=notifier, on_signed_in=on_signed_in)
        self._hub = self._signins.hub
        self._refreshes: dict[str, asyncio.Task[StoredTokens]] = {}
        self._machine: dict[str, MemoryStorage] = {}
        self._anonymous: set[str] = set()  # servers that let the sign-in probe through

    # --- the runtime's hook ---------------------------------------------------------------

    async def http_auth(self, name: str, server: HttpServer) -> httpx2.Auth | None:
        """The auth for a connection to `server`; raises AuthRequired (with a link) or AuthError."""
        if server.auth is None:
            return None
        if server.auth == "bearer":
            return _StaticBearer(self._env(name, server.bearer_token_env, "a bearer token"))
        settings = oauth_settings(server)
        if settings.grant_type == "client_credentials":
            return self._machine_auth(name, server, settings)
        return await self._link_auth(name, server)

    def _env(self, name: str, variable: str | None, what: str) -> str:
        value = self._environ.get(variable or "")
        if not value:
            raise AuthRequired(f"MCP server {name!r} needs {what}: set the environment variable {variable}")
        return value

    def _machine_auth(self, name: str, server: HttpServer, settings: OAuthSettings) -> httpx2.Auth:
        from mcp.client.auth.extensions.client_credentials import (
            ClientCredentialsOAuthProvider,
            PrivateKeyJWTOAuthProvider,
        )

        storage = self._machine.setdefault(record_key(name, server), MemoryStorage())
        assertion = settings.client_assertion
        if assertion is not None:
            from hostlink.mcp.auth.assertion import assertion_signer, load_signing_key

            pem = self._env(name, assertion.key_env, "a private key")
            key = load_signing_key(pem, assertion.alg, assertion.key_env)
            return PrivateKeyJWTOAuthProvider(
                server.url, storage, client_id=settings.client_id or "", scope=settings.scope,
                assertion_provider=assertion_signer(settings.client_id or "", key, assertion.alg, assertion.kid),
                issuer=settings.issuer,
            )
        secret = self._env(name, settings.client_secret_env, "a client secret")
        return ClientCredentialsOAuthProvider(
            server.url, storage, client_id=settings.client_id or "", client_secret=secret,
            scope=settings.scope, issuer=settings.issuer,
        )

    async def _link_auth(self, name: str, server: HttpServer) -> httpx2.Auth:
        key = record_key(name, server)
        self._signins.raise_if_failed(name, key)
        if key not in self._signins.logins:
            record = await self._store.load(key, name, server)
            if record is not None and record.tokens is not None:
                generation = self._generation.get(key, 0)
                self._tokens[key] = record.tokens
                try:
                    if expired(record.tokens):
                        await self._access_token(key, name, server, generation)
                    return _RecordAuth(self, key, name, server, generation)
                except AuthRequired:
                    pass  # the refresh token is gone or refused: sign in again
        if not self._links:
            raise AuthRequired(f"MCP server {name!r} needs sign-in: run `{self._command} mcp auth {name}`")
        link = None if key in self._anonymous else await self._signins.join(key, name, server)
        if link is None:
            self._anonymous.add(key)
            return _RecordAuth(self, key, name, server, self._generation.get(key, 0), anonymous=True)
        raise AuthRequired(f"MCP server {name!r} needs sign-in: open this link to authorize hostlink: {link}", link)

    def _challenged(self, key: str, name: str, server: HttpServer, challenge: tuple[int, str]) -> None:
        """A connection was challenged: start a sign-in with that challenge unless one is pending."""
        self._anonymous.discard(key)
        if self._links and self._signins.state(key) is None:
            self._signins.begin(key, name, server, challenge)

    # --- sign-in by link (hostlink.mcp.auth.signin) ---------------------------------------------

    async def start_login(self, name: str, server: HttpServer, *, retry: bool = True) -> str:
        """Start (or join) the sign-in for `server` and return its authorization link.

        `retry` (the explicit command) clears a remembered failure first.
        """
        return await self._signins.start(name, server, retry=retry)

    async def pending_link(self, name: str, server: HttpServer) -> str | None:
        """The link of a sign-in in progress (e.g. one a mid-session challenge started), if any;
        never starts one. A sign-in that failed raises its latched `authorization_failed`."""
        return await self._signins.pending_link(name, server)

    async def wait_login(self, name: str, server: HttpServer, timeout: float) -> None:
        """Wait for the pending sign-in of `server` to finish; raises AuthError if it failed."""
        await self._signins.wait(name, server, timeout)

    # --- tokens and refresh -----------------------------------------------------------------

    async def _access_token(self, key: str, name: str, server: HttpServer, generation: int) -> str:
        if self._generation.get(key, 0) != generation or key not in self._tokens:
            raise AuthRequired(f"signed out of MCP server {name!r}; run `{self._command} mcp auth {name}` to sign in")
        tokens = self._tokens[key]
        if not expired(tokens):
            return tokens.access_token
        task = self._refreshes.get(key)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._refresh(key, name, server, tokens, generation))
            self._refreshes[key] = task
            task.add_done_callback(
                lambda done: self._refreshes.pop(key, None) if self._refreshes.get(key) is done else None)
        return (await asyncio.shield(task)).access_token

    async def _refresh(self, key: str, name: str, server: HttpServer, seen: StoredTokens,
                       generation: int) -> StoredTokens:
        """Refresh under the credential lock, or adopt a token another process already rotated."""
        async with credential_lock(key):
            record = await self._store.load(key, name, server)
            if record is None or record.tokens is None:
                raise AuthRequired(f"signed out of MCP server {name!r}")
            if record.tokens.access_token != seen.access_token and not expired(record.tokens):
                fresh = record.tokens
            elif record.tokens.refresh_token is None:
                raise AuthRequired(f"the sign-in to MCP server {name!r} expired")
            else:
                fresh = await self._post_refresh(key, record, name, server)
            if self._generation.get(key, 0) != generation:
                raise AuthRequired(f"signed out of MCP server {name!r}")
        self._tokens[key] = fresh
        return fresh

    async def _post_refresh(self, key: str, record: SecureRecord, name: str, server: HttpServer) -> StoredTokens:
        from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
        from pydantic import ValidationError

        assert record.tokens is not None and record.tokens.refresh_token is not None
        client = OAuthClientInformationFull.model_validate(record.client)
        data = {"grant_type": "refresh_token", "refresh_token": record.tokens.refresh_token}
        if record.resource:
            data["resource"] = record.resource
        data, headers = client_authenticated(server.url, client, data)
        async with httpx2.AsyncClient(transport=SafeTransport(MAX_RESPONSE_BYTES),
                                      timeout=server.request_timeout_ms / 1000) as http:
            response = await http.post(record.token_endpoint, data=data, headers=headers)
        body = response.content
        if response.status_code != 200:
            message = classify_failure("refreshing the sign-in", response.status_code, body)
            if oauth_error_code(body) == "invalid_grant":  # the refresh token is dead: sign in again
                await self._store.save(key, record.model_copy(update={"tokens": None}))
                raise AuthRequired(message)
            raise AuthError(message)
        try:
            token = OAuthToken.model_validate_json(body)
        except ValidationError:
            raise AuthError("the authorization server's refresh answer is not a valid token response") from None
        fresh = stored_tokens(token, record.tokens)
        await self._store.save(key, record.model_copy(update={"tokens": fresh}))
        return fresh

    # --- sign-out, status, shutdown ---------------------------------------------------------

    async def logout(self, name: str, server: HttpServer) -> Revocation | None:
        """Sign out: cached tokens stop at once; success only once the keyring confirms deletion.

        Then the tokens the record held are revoked at the authorization server (bounded in
        time); the answer says how that went, or is None when there was nothing to revoke.
        """
        key = record_key(name, server)
        self._generation[key] = self._generation.get(key, 0) + 1
        self._tokens.pop(key, None)
        self._signins.forget(key)
        self._machine.pop(key, None)
        self._anonymous.discard(key)
        if server.auth != "oauth" or oauth_settings(server).grant_type != "authorization_code":
            return None
        async with credential_lock(key):
            try:
                record = await self._store.load(key, name, server)
            except StoreError as error:
                if error.state in ("unavailable", "locked"):
                    raise
                record = None  # corrupt, ambiguous or another server's: removed, never sent anywhere
            await self._store.delete(key)
        return None if record is None else await revoke_tokens(record, server)

    async def credential_state(self, name: str, server: HttpServer) -> str:
        """A short credential state for status; reads the keyring at most, never connects."""
        if server.auth is None:
            return "no authentication"
        from_env = server.env_credential_state(self._environ)
        if from_env is not None:
            return from_env
        key = record_key(name, server)
        pending = self._signins.state(key)
        if pending is not None:
            return pending
        return await stored_state(self._store, key, name, server)

    async def aclose(self) -> None:
        """Cancel every sign-in and refresh and close the callback listeners."""
        tasks = self._signins.stop_all() + list(self._refreshes.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._hub.close()
        self._tokens.clear()
