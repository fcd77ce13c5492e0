"""Authentication policy for Streamable HTTP MCP servers.

The SDK does the OAuth protocol (discovery, PKCE S256, client registration, issuer checks,
token validation); hostlink decides what is allowed around it:

- ``bearer``: the token comes from the environment variable ``bearerTokenEnv``.
- ``client_credentials``: client id and exact issuer from config, secret from the
  environment at connect time, tokens in memory only; nothing is stored or linked.
- ``authorization_code``: without stored tokens, a sign-in starts in the background and the
  caller gets an authorization *link* (never a browser launch). Concurrent callers share one
  sign-in; a failed start is remembered until an explicit retry. The connection itself only
  ever gets a narrow bearer auth, never the interactive provider.

Tokens accepted from a sign-in or a refresh are written to the keyring and read back under
the cross-process credential lock first. Sign-out bumps an account generation that voids
every sign-in, callback and cached token that predates it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urljoin, urlsplit

import anyio
import httpx2

from hostlink.host.output import strip_controls
from hostlink.mcp.errors import AuthError, AuthRequired, McpError
from hostlink.mcp.http import SafeTransport
from hostlink.mcp.login import CallbackHub, Flow
from hostlink.mcp.schema import check_url
from hostlink.mcp.store import (
    SecureRecord,
    SecureStore,
    StoredTokens,
    StoreError,
    credential_lock,
    record_key,
    same_issuer,
)

if TYPE_CHECKING:
    from hostlink.host import Notifier
    from hostlink.mcp.schema import HttpServer, OAuthSettings, ServerConfig

LOGIN_TIMEOUT_SECONDS = 600.0
EXPIRY_SKEW_SECONDS = 30.0
MAX_RESPONSE_BYTES = 1024 * 1024
MAX_DETAIL_CHARS = 300
MAX_LINK_CHARS = 8192
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
    }
)


class _WithholdSdkErrorText(logging.Filter):
    """The SDK logs OAuth flow failures with their full text, which can carry provider-supplied
    values; hostlink reports every failure itself, classified and bounded, so the SDK's log
    record keeps only a fixed line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info or record.levelno >= logging.ERROR:
            record.msg, record.args, record.exc_info, record.exc_text = "OAuth flow error (see hostlink's message)", (), None, None
        return True


def _quiet_sdk_auth_log() -> None:
    logger = logging.getLogger("mcp.client.auth.oauth2")
    if not any(isinstance(f, _WithholdSdkErrorText) for f in logger.filters):
        logger.addFilter(_WithholdSdkErrorText())


def bounded_detail(text: str) -> str:
    """Provider- or SDK-supplied text made safe for a message: no controls, one line, bounded."""
    clean = " ".join(strip_controls(text).split())
    return clean if len(clean) <= MAX_DETAIL_CHARS else clean[:MAX_DETAIL_CHARS] + "…"


def oauth_error_code(body: bytes) -> str | None:
    """The ``error`` of an OAuth error answer when it is a known code, else None."""
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


def sign_in_refusal(name: str, server: ServerConfig) -> str | None:
    """Why ``server`` has no sign-in by link (one line), or None when it has one."""
    from hostlink.mcp.schema import HttpServer

    if not isinstance(server, HttpServer):
        return f"MCP server {name!r} is a local stdio server; it has no sign-in"
    if server.auth is None:
        return f'MCP server {name!r} has no "auth" configured; there is no sign-in for it'
    if server.auth == "bearer":
        return (f"MCP server {name!r} does not sign in with a link; its bearer token comes from the "
                f"environment variable {server.bearer_token_env}")
    if server.oauth is not None and server.oauth.grant_type == "client_credentials":
        return (f"MCP server {name!r} does not sign in with a link; it uses machine OAuth with the client "
                f"secret from the environment variable {server.oauth.client_secret_env}")
    return None


def _describe(error: BaseException) -> str:
    from mcp.client.auth import OAuthFlowError, OAuthRegistrationError

    if isinstance(error, McpError):
        return str(error)
    if isinstance(error, OAuthRegistrationError):
        return f"client registration failed: {bounded_detail(str(error))}"
    if isinstance(error, OAuthFlowError):
        return f"the authorization flow failed: {bounded_detail(str(error))}"
    if isinstance(error, httpx2.HTTPError):
        return f"the server or its authorization server could not be reached ({type(error).__name__})"
    return f"unexpected failure ({type(error).__name__})"


def _expired(tokens: StoredTokens) -> bool:
    return tokens.expires_at is not None and time.time() >= tokens.expires_at - EXPIRY_SKEW_SECONDS


def _stored(token: Any, prior: StoredTokens | None = None) -> StoredTokens:
    from mcp.shared.auth_utils import calculate_token_expiry

    return StoredTokens(
        access_token=token.access_token,
        token_type=token.token_type,
        refresh_token=token.refresh_token or (prior.refresh_token if prior else None),
        scope=token.scope or (prior.scope if prior else None),
        expires_at=calculate_token_expiry(token.expires_in) if token.expires_in is not None else None,
    )


class _MemoryStorage:
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


class _StaticBearer(httpx2.Auth):
    def __init__(self, token: str) -> None:
        self._header = f"Bearer {token}"

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        request.headers["Authorization"] = self._header
        yield request


def _challenge_of(response: httpx2.Response) -> tuple[int, str] | None:
    """A 401, or a 403 asking for more scope (step-up), as (status, WWW-Authenticate)."""
    header = response.headers.get("www-authenticate", "")
    if response.status_code == 401 or (response.status_code == 403 and "insufficient_scope" in header):
        return response.status_code, header
    return None


class _RecordAuth(httpx2.Auth):
    """The narrow auth a connection gets: a stored bearer token, refreshed when it expires.

    ``anonymous`` is for a server that let the sign-in probe through without credentials.
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
        challenge = _challenge_of(response)
        if challenge is not None:
            self._manager._challenged(self._key, self._name, self._server, challenge)


class _ExchangeGuard(httpx2.AsyncBaseTransport):
    """The transport of a sign-in: bounded reads, classified failures, one code exchange.

    Once the callback is consumed (``arm``), exactly one POST may leave — the code exchange —
    whatever endpoint metadata was seen before; a replay is refused. Failed POST answers are
    classified here, so no provider text reaches the SDK's error messages or logs.
    """

    def __init__(self, probe_url: str, challenge: tuple[int, str] | None) -> None:
        self._probe = httpx2.URL(probe_url)
        self._challenge = challenge
        self._inner = SafeTransport(MAX_RESPONSE_BYTES)
        self._armed = False
        self.exchanged = False

    def arm(self) -> None:
        self._armed = True

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if self.exchanged:
            # The SDK repeats the probe with the new token; the sign-in is complete without it.
            return httpx2.Response(204, request=request)
        if self._challenge is not None and request.url == self._probe:
            # The server already challenged a real request: hand the SDK that answer.
            (status, header), self._challenge = self._challenge, None
            return httpx2.Response(status, headers={"WWW-Authenticate": header}, request=request)
        if self._armed and request.method != "POST":
            raise AuthError("the sign-in tried a request other than the single code exchange")
        exchange = self._armed
        if exchange:
            self.exchanged = True  # consumed before it is sent: never replayed, even on failure
        response = await self._inner.handle_async_request(request)
        body = await response.aread()
        probe = not exchange and request.url == self._probe
        if request.method == "POST" and not probe and response.status_code not in (200, 201):
            raise AuthError(classify_failure("the code exchange" if exchange else "client registration",
                                             response.status_code, body))
        return httpx2.Response(response.status_code, headers=response.headers, content=body, request=request)

    async def aclose(self) -> None:
        await self._inner.aclose()


@dataclass(eq=False)
class _Login:
    """One background sign-in for one server key, shared by every caller that needs it."""

    generation: int
    challenge: tuple[int, str] | None = None
    flow_id: str = field(default_factory=lambda: secrets.token_urlsafe(16))
    link: str | None = None
    error: str | None = None
    ready: anyio.Event = field(default_factory=anyio.Event)
    task: asyncio.Task | None = None
    cancelled: bool = False
    anonymous: bool = False  # the server answered the probe without asking for credentials

    async def wait_link(self, timeout: float) -> str | None:
        with anyio.move_on_after(timeout):
            await self.ready.wait()
        if self.link is not None or self.anonymous:
            return self.link
        raise AuthError(self.error or "preparing the authorization link timed out")


class AuthManager:
    """Credentials of every HTTP server of one host session (see the module docstring).

    ``notifier`` (the host session's) hears when a background sign-in that issued a link ends;
    ``on_signed_in(name)`` runs after a sign-in's tokens are stored (the host resets a setup
    that had failed for want of them).
    """

    def __init__(self, environ: Mapping[str, str] | None = None, *, notifier: Notifier | None = None,
                 on_signed_in: Callable[[str], Awaitable[None]] | None = None) -> None:
        self._environ = os.environ if environ is None else environ
        self._notifier = notifier
        self._on_signed_in = on_signed_in
        _quiet_sdk_auth_log()
        self._store = SecureStore()
        self._hub = CallbackHub()
        self._generation: dict[str, int] = {}
        self._logins: dict[str, _Login] = {}
        self._failed: dict[str, str] = {}
        self._tokens: dict[str, StoredTokens] = {}
        self._refreshes: dict[str, asyncio.Task] = {}
        self._machine: dict[str, _MemoryStorage] = {}
        self._anonymous: set[str] = set()  # servers that let the sign-in probe through

    # --- the runtime's hook ---------------------------------------------------------------

    async def http_auth(self, name: str, server: HttpServer) -> httpx2.Auth | None:
        """The auth for a connection to ``server``; raises AuthRequired (with a link) or AuthError."""
        if server.auth is None:
            return None
        if server.auth == "bearer":
            return _StaticBearer(self._env(name, server.bearer_token_env, "a bearer token"))
        settings = self._settings(server)
        if settings.grant_type == "client_credentials":
            return self._machine_auth(name, server, settings)
        return await self._link_auth(name, server)

    def _env(self, name: str, variable: str | None, what: str) -> str:
        value = self._environ.get(variable or "")
        if not value:
            raise AuthRequired(f"MCP server {name!r} needs {what}: set the environment variable {variable}")
        return value

    @staticmethod
    def _settings(server: HttpServer) -> OAuthSettings:
        from hostlink.mcp.schema import OAuthSettings

        return server.oauth or OAuthSettings()

    def _machine_auth(self, name: str, server: HttpServer, settings: OAuthSettings) -> httpx2.Auth:
        from mcp.client.auth.extensions.client_credentials import (
            ClientCredentialsOAuthProvider,
        )

        secret = self._env(name, settings.client_secret_env, "a client secret")
        storage = self._machine.setdefault(record_key(name, server), _MemoryStorage())
        return ClientCredentialsOAuthProvider(
            server.url, storage, client_id=settings.client_id or "", client_secret=secret,
            scope=settings.scope, issuer=settings.issuer,
        )

    async def _link_auth(self, name: str, server: HttpServer) -> httpx2.Auth:
        key = record_key(name, server)
        self._raise_if_failed(name, key)
        login = self._logins.get(key)
        if login is None:
            record = await self._store.load(key, name, server)
            if record is not None and record.tokens is not None:
                generation = self._generation.get(key, 0)
                self._tokens[key] = record.tokens
                try:
                    if _expired(record.tokens):
                        await self._access_token(key, name, server, generation)
                    return _RecordAuth(self, key, name, server, generation)
                except AuthRequired:
                    pass  # the refresh token is gone or refused: sign in again
        link = None if key in self._anonymous else await self._join_login(key, name, server)
        if link is None:
            self._anonymous.add(key)
            return _RecordAuth(self, key, name, server, self._generation.get(key, 0), anonymous=True)
        raise AuthRequired(f"MCP server {name!r} needs sign-in: open this link to authorize hostlink: {link}", link)

    def _raise_if_failed(self, name: str, key: str) -> None:
        if key in self._failed:
            raise AuthError(
                f"authorization_failed: sign-in to MCP server {name!r} failed ({self._failed[key]}); "
                f"retry with `hostlink mcp auth {name}` or the mcp tool's action \"auth\""
            )

    # --- sign-in ----------------------------------------------------------------------------

    async def start_login(self, name: str, server: HttpServer, *, retry: bool = True) -> str:
        """Start (or join) the sign-in for ``server`` and return its authorization link.

        ``retry`` (the explicit command) clears a remembered failure first.
        """
        refusal = sign_in_refusal(name, server)
        if refusal is not None:
            raise AuthError(refusal)
        key = record_key(name, server)
        if retry:
            self._failed.pop(key, None)
        link = await self._join_login(key, name, server)
        if link is None:
            raise AuthError(f"MCP server {name!r} did not ask for sign-in; it is usable without it")
        return link

    async def _join_login(self, key: str, name: str, server: HttpServer) -> str | None:
        """The link of the pending sign-in for ``key``, starting one if none is pending."""
        self._raise_if_failed(name, key)
        login = self._logins.get(key) or self._begin_login(key, name, server, None)
        try:
            return await login.wait_link(server.request_timeout_ms / 1000)
        except AuthError:
            self._raise_if_failed(name, key)  # the failure is latched: say so, and how to retry
            raise

    def _begin_login(self, key: str, name: str, server: HttpServer, challenge: tuple[int, str] | None) -> _Login:
        login = _Login(self._generation.get(key, 0), challenge)
        self._logins[key] = login
        login.task = asyncio.get_running_loop().create_task(self._run_login(login, key, name, server))
        return login

    def _challenged(self, key: str, name: str, server: HttpServer, challenge: tuple[int, str]) -> None:
        """A connection was challenged: start a sign-in with that challenge unless one is pending."""
        self._anonymous.discard(key)
        if key not in self._logins and key not in self._failed:
            self._begin_login(key, name, server, challenge)

    async def pending_link(self, name: str, server: HttpServer) -> str | None:
        """The link of a sign-in in progress (e.g. one a mid-session challenge started), if any.

        For error messages of requests that failed on a challenge; never starts a sign-in.
        A sign-in that failed raises its latched ``authorization_failed`` AuthError instead.
        """
        key = record_key(name, server)
        login = self._logins.get(key)
        if login is not None:
            try:
                link = await login.wait_link(server.request_timeout_ms / 1000)
            except AuthError:
                link = None
            if link is not None:
                return link
        self._raise_if_failed(name, key)
        return None

    async def wait_login(self, name: str, server: HttpServer, timeout: float) -> None:
        """Wait for the pending sign-in of ``server`` to finish; raises AuthError if it failed."""
        key = record_key(name, server)
        login = self._logins.get(key)
        if login is not None and login.task is not None:
            await asyncio.wait({login.task}, timeout=timeout)
            if not login.task.done():
                raise AuthError(f"sign-in to MCP server {name!r} is still waiting for the browser")
        self._raise_if_failed(name, key)
        if login is not None and login.error:
            raise AuthError(login.error)

    async def _run_login(self, login: _Login, key: str, name: str, server: HttpServer) -> None:
        flow: Flow | None = None
        try:
            with anyio.CancelScope() as scope:
                scope.deadline = anyio.current_time() + server.request_timeout_ms / 1000
                flow = await self._hub.open_flow(self._settings(server).redirect_uri)
                await self._sign_in(login, key, name, server, flow, scope)
            if scope.cancelled_caught:
                raise AuthError("the sign-in timed out" if login.link else "preparing the authorization link timed out")
        except asyncio.CancelledError:
            login.cancelled = True
            login.error = "the sign-in was cancelled (sign-out or shutdown)"
            raise
        except Exception as error:
            login.error = _describe(error)
            if not login.cancelled and self._generation.get(key, 0) == login.generation:
                self._failed[key] = login.error
        finally:
            outcome = (f"Sign-in to MCP server {name!r} failed: {login.error}." if login.error
                       else f"Signed in to MCP server {name!r}.")
            if flow is not None:
                flow.finish(outcome)
                flow.end()
            if self._notifier is not None and login.link is not None and not login.cancelled:
                self._notifier.notify(outcome, "warning" if login.error else "info")
            login.ready.set()
            if self._logins.get(key) is login:
                del self._logins[key]

    async def _sign_in(
        self, login: _Login, key: str, name: str, server: HttpServer, flow: Flow, scope: anyio.CancelScope
    ) -> None:
        from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
        from mcp.shared.auth import OAuthClientMetadata
        from mcp_types.version import LATEST_HANDSHAKE_VERSION

        settings = self._settings(server)
        record = await self._store.load(key, name, server)  # a corrupt or foreign record stops here
        granted = record.tokens.scope if record is not None and record.tokens is not None else None
        storage = _MemoryStorage(self._known_client(name, record, settings, flow.redirect_uri))
        guard = _ExchangeGuard(server.url, login.challenge)

        async def on_link(url: str) -> None:
            await self._accept_link(login, key, name, server, provider, storage, flow, url)
            scope.deadline = anyio.current_time() + LOGIN_TIMEOUT_SECONDS

        async def on_callback() -> AuthorizationCodeResult:
            callback = await flow.wait()
            self._check_generation(login, key)
            if callback.error is not None:
                raise AuthError(f"the authorization server did not grant access ({callback.error})")
            guard.arm()
            return AuthorizationCodeResult(code=callback.code, state=callback.state, iss=callback.iss)

        provider = OAuthClientProvider(
            server.url,
            OAuthClientMetadata(
                redirect_uris=[flow.redirect_uri], grant_types=["authorization_code", "refresh_token"],
                response_types=["code"], client_name="hostlink", scope=granted or settings.scope,
            ),
            storage, redirect_handler=on_link, callback_handler=on_callback,
            client_metadata_url=settings.client_metadata_url,
        )
        probe = {
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {},
                       "clientInfo": {"name": "hostlink", "version": "0"}},
        }
        headers = {**server.headers, "Accept": "application/json, text/event-stream",
                   "MCP-Protocol-Version": LATEST_HANDSHAKE_VERSION}
        async with httpx2.AsyncClient(transport=guard, timeout=server.request_timeout_ms / 1000) as client:
            response = await client.post(server.url, json=probe, headers=headers, auth=provider)
        if login.challenge is None and response.status_code < 400 and login.link is None:
            login.anonymous = True
            return
        if storage.tokens is None or not guard.exchanged:
            raise AuthError(f"sign-in did not complete (HTTP {response.status_code})")
        await self._accept_tokens(login, key, name, server, storage)
        if self._on_signed_in is not None:
            await self._on_signed_in(name)

    def _known_client(self, name: str, record: SecureRecord | None, settings: OAuthSettings,
                      redirect_uri: str) -> Any:
        """A pre-registered client from config, or the stored registration for this redirect URI."""
        from mcp.shared.auth import OAuthClientInformationFull

        if settings.client_id is not None:
            secret = self._env(name, settings.client_secret_env, "a client secret") if settings.client_secret_env else None
            return OAuthClientInformationFull(
                client_id=settings.client_id, client_secret=secret, redirect_uris=[redirect_uri],
                token_endpoint_auth_method="client_secret_basic" if secret else "none",
            )
        if record is not None and redirect_uri in record.client.get("redirect_uris", []):
            return OAuthClientInformationFull.model_validate(record.client)
        return None

    async def _accept_link(self, login: _Login, key: str, name: str, server: HttpServer, provider: Any,
                           storage: _MemoryStorage, flow: Flow, url: str) -> None:
        """Bind the sign-in to its issuer, store the registration (read back), then publish the link."""
        context = provider.context
        metadata = context.oauth_metadata
        origin = context.get_authorization_base_url(server.url)
        issuer = str(metadata.issuer) if metadata is not None else origin
        configured = self._settings(server).issuer
        if configured is not None and not same_issuer(issuer, configured):
            raise AuthError("the authorization server's issuer is not the configured oauth.issuer; sign-in refused")
        try:
            check_url(url)
        except ValueError as problem:
            raise AuthError(f"the authorization server's sign-in link was refused: {problem}") from None
        states = parse_qs(urlsplit(url).query).get("state", [])
        if len(states) != 1 or storage.client_info is None or len(url) > MAX_LINK_CHARS:
            raise AuthError("the authorization link is malformed or too long")
        token_endpoint = str(metadata.token_endpoint) if metadata is not None else urljoin(origin, "/token")
        resource = context.get_resource_url() if context.should_include_resource_param(context.protocol_version) else None
        record = SecureRecord(
            version=1, server=name, endpoint=server.url, issuer=issuer, token_endpoint=token_endpoint,
            resource=resource, client=storage.client_info.model_dump(mode="json", exclude_none=True),
            tokens=None, pending=login.flow_id,
        )
        async with credential_lock(key):
            self._check_generation(login, key)
            existing = await self._store.load(key, name, server)  # a corrupt record is refused, not overwritten
            if existing is not None and same_issuer(existing.issuer, issuer):
                record.tokens = existing.tokens  # still usable while a step-up sign-in is pending
            await self._store.save(key, record)
        flow.expect(states[0])
        login.link = url
        login.ready.set()

    async def _accept_tokens(self, login: _Login, key: str, name: str, server: HttpServer,
                             storage: _MemoryStorage) -> None:
        tokens = _stored(storage.tokens)
        async with credential_lock(key):
            self._check_generation(login, key)
            record = await self._store.load(key, name, server)
            if record is None or record.pending != login.flow_id:
                raise AuthError("this sign-in was superseded or signed out; its tokens were discarded")
            await self._store.save(key, record.model_copy(update={"tokens": tokens, "pending": None}))
        self._tokens[key] = tokens

    def _check_generation(self, login: _Login, key: str) -> None:
        if self._generation.get(key, 0) != login.generation:
            raise AuthError("the sign-in was cancelled by a sign-out")

    # --- tokens and refresh -----------------------------------------------------------------

    async def _access_token(self, key: str, name: str, server: HttpServer, generation: int) -> str:
        if self._generation.get(key, 0) != generation or key not in self._tokens:
            raise AuthRequired(f"signed out of MCP server {name!r}; run `hostlink mcp auth {name}` to sign in")
        tokens = self._tokens[key]
        if not _expired(tokens):
            return tokens.access_token
        task = self._refreshes.get(key)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._refresh(key, name, server, tokens, generation))
            self._refreshes[key] = task
            task.add_done_callback(lambda done: self._refreshes.pop(key, None) if self._refreshes.get(key) is done else None)
        return (await asyncio.shield(task)).access_token

    async def _refresh(self, key: str, name: str, server: HttpServer, seen: StoredTokens,
                       generation: int) -> StoredTokens:
        """Refresh under the credential lock, or adopt a token another process already rotated."""
        async with credential_lock(key):
            record = await self._store.load(key, name, server)
            if record is None or record.tokens is None:
                raise AuthRequired(f"signed out of MCP server {name!r}")
            if record.tokens.access_token != seen.access_token and not _expired(record.tokens):
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
        from mcp.client.auth.oauth2 import OAuthContext
        from mcp.shared.auth import (
            OAuthClientInformationFull,
            OAuthClientMetadata,
            OAuthToken,
        )
        from pydantic import ValidationError

        assert record.tokens is not None and record.tokens.refresh_token is not None
        client = OAuthClientInformationFull.model_validate(record.client)
        data = {"grant_type": "refresh_token", "refresh_token": record.tokens.refresh_token,
                "client_id": client.client_id}
        if record.resource:
            data["resource"] = record.resource
        context = OAuthContext(server.url, OAuthClientMetadata(redirect_uris=None), _MemoryStorage(), None, None,
                               client_info=client)
        data, headers = context.prepare_token_auth(data, {"Content-Type": "application/x-www-form-urlencoded"})
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
        fresh = _stored(token, record.tokens)
        await self._store.save(key, record.model_copy(update={"tokens": fresh}))
        return fresh

    # --- sign-out, status, shutdown ---------------------------------------------------------

    async def logout(self, name: str, server: HttpServer) -> None:
        """Sign out: cached tokens stop at once; success only once the keyring confirms deletion."""
        key = record_key(name, server)
        self._generation[key] = self._generation.get(key, 0) + 1
        self._tokens.pop(key, None)
        self._failed.pop(key, None)
        self._machine.pop(key, None)
        self._anonymous.discard(key)
        login = self._logins.pop(key, None)
        if login is not None and login.task is not None:
            login.cancelled = True
            login.task.cancel()
        if server.auth != "oauth" or self._settings(server).grant_type != "authorization_code":
            return
        async with credential_lock(key):
            await self._store.delete(key)

    async def credential_state(self, name: str, server: HttpServer) -> str:
        """A short credential state for status; reads the keyring at most, never connects."""
        if server.auth is None:
            return "no authentication"
        if server.auth == "bearer":
            return f"env {'set' if self._environ.get(server.bearer_token_env or '') else 'missing'}: {server.bearer_token_env}"
        settings = self._settings(server)
        key = record_key(name, server)
        if settings.grant_type == "client_credentials":
            state = "set" if self._environ.get(settings.client_secret_env or "") else "missing"
            return f"env {state}: {settings.client_secret_env}"
        if key in self._failed:
            return "authorization failed"
        if key in self._logins:
            return "pending link"
        try:
            record = await self._store.load(key, name, server)
        except StoreError as error:
            return {"unavailable": "keyring unavailable", "locked": "keyring locked", "ambiguous": "keyring ambiguous",
                    "corrupt": "record corrupt",
                    "mismatch": "record mismatch"}.get(error.state, "keyring unavailable")
        if record is None or record.tokens is None:
            return "pending link" if record is not None and record.pending else "signed out"
        if not _expired(record.tokens):
            return "signed in"
        return "refreshable" if record.tokens.refresh_token else "expired"

    async def aclose(self) -> None:
        """Cancel every sign-in and refresh and close the callback listeners."""
        tasks = [login.task for login in self._logins.values() if login.task is not None]
        tasks += list(self._refreshes.values())
        for login in self._logins.values():
            login.cancelled = True
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._hub.close()
        self._tokens.clear()
