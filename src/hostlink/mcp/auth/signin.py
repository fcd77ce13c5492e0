"""Sign-in by link: the OAuth authorization-code flow of one host session's AuthManager.

Without stored tokens a sign-in starts in the background and the caller gets an authorization
*link* (never a browser launch); the user's browser returns to a one-shot loopback callback
(`hostlink.mcp.auth.callback`). Concurrent callers share one sign-in per server key; a failed
start is remembered until an explicit retry. The SDK runs the protocol (discovery, PKCE S256,
registration, issuer checks) on a transport that lets exactly one code exchange leave once the
callback arrives. The sign-in binds its record to the issuer and stores the registration (read
back) before the link is published, and its tokens only while no sign-out superseded it.

`sign_in` is the one entry of every explicit sign-in (the `/mcp auth` command, the
tool's action `auth`, a CLI's `mcp auth`).
"""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qs, urljoin, urlsplit

import anyio
import httpx2

from hostlink.host.output import strip_controls
from hostlink.mcp.auth.callback import CallbackHub, Flow
from hostlink.mcp.auth.oauth import (
    MAX_RESPONSE_BYTES,
    MemoryStorage,
    bounded_detail,
    classify_failure,
    oauth_settings,
    quiet_sdk_auth_log,
    stored_tokens,
)
from hostlink.mcp.auth.store import (
    SecureRecord,
    SecureStore,
    StoredTokens,
    StoreError,
    credential_lock,
    record_key,
    same_issuer,
)
from hostlink.mcp.config.schema import check_url
from hostlink.mcp.errors import AuthError, McpError
from hostlink.mcp.transports.http import SafeTransport

if TYPE_CHECKING:
    from hostlink.host import Notifier
    from hostlink.mcp.auth.revocation import Revocation
    from hostlink.mcp.config.schema import HttpServer, OAuthSettings, ServerConfig


class LinkSigner(Protocol):
    """What a sign-in by link needs of the host session's AuthManager (typed here, not imported:
    the manager holds a `SignIns`, so naming it would make the two modules a cycle)."""

    async def start_login(self, name: str, server: HttpServer, *, retry: bool = True) -> str: ...

    async def logout(self, name: str, server: HttpServer) -> Revocation | None: ...


LOGIN_TIMEOUT_SECONDS = 600.0
MAX_LINK_CHARS = 8192


def sign_in_refusal(name: str, server: ServerConfig) -> str | None:
    """Why `server` has no sign-in by link (one line), or None when it has one."""
    if server.transport != "http":
        return f"MCP server {name!r} is a local stdio server; it has no sign-in"
    if server.auth is None:
        return f'MCP server {name!r} has no "auth" configured; there is no sign-in for it'
    if server.auth == "bearer":
        return (f"MCP server {name!r} does not sign in with a link; its bearer token comes from the "
                f"environment variable {server.bearer_token_env}")
    if server.oauth is not None and server.oauth.grant_type == "client_credentials":
        assertion = server.oauth.client_assertion
        what = (f"the private key from the environment variable {assertion.key_env}" if assertion else
                f"the client secret from the environment variable {server.oauth.client_secret_env}")
        return f"MCP server {name!r} does not sign in with a link; it uses machine OAuth with {what}"
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


def link_signer(auth: LinkSigner | None, name: str, server: ServerConfig) -> tuple[LinkSigner, HttpServer]:
    """The manager that signs in to `server` by link, and `server` as the HTTP server it then
    is; AuthError saying why there is none."""
    refusal = sign_in_refusal(name, server)
    if refusal is not None:
        raise AuthError(refusal)
    if auth is None:
        raise AuthError(f"MCP server {name!r} needs sign-in, but authentication support is not configured in this host")
    assert server.transport == "http"  # sign_in_refusal refused every other transport
    return auth, server


async def sign_in(auth: LinkSigner | None, name: str, server: ServerConfig) -> str:
    """Start or retry the sign-in to `server` (clearing a latched failure) and return its link.

    The one sign-in of every caller; raises AuthError when `server` has no sign-in by link or
    the host no authentication support. Saves no configuration, opens no browser.
    """
    signer, http_server = link_signer(auth, name, server)
    return await signer.start_login(name, http_server)


def sign_in_prompt(name: str, link: str) -> str:
    """What a person is told to do with a sign-in link (two lines)."""
    return f"Open this link in your browser to sign in to {name}:\n{strip_controls(link)}"


def signed_out(name: str, revocation: Revocation | None) -> str:
    """What a person is told after a sign-out: the record is gone, and what became of the tokens."""
    told = f"{name}: signed out (the keyring confirmed the record is gone)"
    return told if revocation is None else f"{told}; {revocation.sentence()}"


class _ExchangeGuard(httpx2.AsyncBaseTransport):
    """The transport of a sign-in: bounded reads, classified failures, one code exchange.

    Once the callback is consumed (`arm`), exactly one POST may leave — the code exchange —
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
    task: asyncio.Task[None] | None = None
    cancelled: bool = False
    anonymous: bool = False  # the server answered the probe without asking for credentials

    async def wait_link(self, timeout: float) -> str | None:
        with anyio.move_on_after(timeout):
            await self.ready.wait()
        if self.link is not None or self.anonymous:
            return self.link
        raise AuthError(self.error or "preparing the authorization link timed out")


class SignIns:
    """The sign-ins by link of one AuthManager, sharing its store, generations and tokens.

    `generation` and `tokens` are the manager's own dicts (a sign-out bumps a generation,
    a sign-in's accepted tokens become the cached ones); `env` reads a named secret.
    """

    def __init__(self, store: SecureStore, generation: dict[str, int], tokens: dict[str, StoredTokens],
                 env: Callable[[str, str | None, str], str], *, command: str, notifier: Notifier | None,
                 on_signed_in: Callable[[str], Awaitable[None]] | None) -> None:
        quiet_sdk_auth_log()
        self._store, self._generation, self._tokens, self._env = store, generation, tokens, env
        self._command, self._notifier, self._on_signed_in = command, notifier, on_signed_in
        self.hub = CallbackHub()
        self.logins: dict[str, _Login] = {}
        self.failed: dict[str, tuple[str, bool]] = {}  # the reason, and whether retrying alone can help

    def state(self, key: str) -> str | None:
        """`authorization failed`, `pending link` or None (ask the store)."""
        if key in self.failed:
            return "authorization failed"
        if key in self.logins:
            return "pending link"
        return None

    def forget(self, key: str) -> None:
        """A sign-out: the remembered failure goes, a sign-in in progress is cancelled."""
        self.failed.pop(key, None)
        login = self.logins.pop(key, None)
        if login is not None and login.task is not None:
            login.cancelled = True
            login.task.cancel()

    def stop_all(self) -> list[asyncio.Task[None]]:
        """Mark every sign-in cancelled and return their tasks (the caller cancels and awaits)."""
        for login in self.logins.values():
            login.cancelled = True
        return [login.task for login in self.logins.values() if login.task is not None]

    def raise_if_failed(self, name: str, key: str) -> None:
        """The latched failure; a retry is suggested only when retrying alone can help (an
        unusable keyring needs fixing first, and its reason says how)."""
        if key in self.failed:
            reason, retry_helps = self.failed[key]
            if not retry_helps:
                raise AuthError(f"authorization_failed: sign-in to MCP server {name!r} failed: {reason}")
            raise AuthError(
                f"authorization_failed: sign-in to MCP server {name!r} failed ({reason}); "
                f"retry with `{self._command} mcp auth {name}` or the mcp tool's action \"auth\""
            )

    async def start(self, name: str, server: HttpServer, *, retry: bool = True) -> str:
        """Start (or join) the sign-in for `server` and return its authorization link.

        `retry` (the explicit command) clears a remembered failure first.
        """
        refusal = sign_in_refusal(name, server)
        if refusal is not None:
            raise AuthError(refusal)
        key = record_key(name, server)
        if retry:
            self.failed.pop(key, None)
        link = await self.join(key, name, server)
        if link is None:
            raise AuthError(f"MCP server {name!r} did not ask for sign-in; it is usable without it")
        return link

    async def join(self, key: str, name: str, server: HttpServer) -> str | None:
        """The link of the pending sign-in for `key`, starting one if none is pending."""
        self.raise_if_failed(name, key)
        login = self.logins.get(key) or self.begin(key, name, server, None)
        try:
            return await login.wait_link(server.request_timeout_ms / 1000)
        except AuthError:
            self.raise_if_failed(name, key)  # the failure is latched: say so, and how to retry
            raise

    def begin(self, key: str, name: str, server: HttpServer, challenge: tuple[int, str] | None) -> _Login:
        login = _Login(self._generation.get(key, 0), challenge)
        self.logins[key] = login
        login.task = asyncio.get_running_loop().create_task(self._run(login, key, name, server))
        return login

    async def pending_link(self, name: str, server: HttpServer) -> str | None:
        """The link of a sign-in in progress (e.g. one a mid-session challenge started), if any.

        For error messages of requests that failed on a challenge; never starts a sign-in.
        A sign-in that failed raises its latched `authorization_failed` AuthError instead.
        """
        key = record_key(name, server)
        login = self.logins.get(key)
        if login is not None:
            try:
                link = await login.wait_link(server.request_timeout_ms / 1000)
            except AuthError:
                link = None
            if link is not None:
                return link
        self.raise_if_failed(name, key)
        return None

    async def wait(self, name: str, server: HttpServer, timeout: float) -> None:
        """Wait for the pending sign-in of `server` to finish; raises AuthError if it failed."""
        key = record_key(name, server)
        login = self.logins.get(key)
        if login is not None and login.task is not None:
            await asyncio.wait({login.task}, timeout=timeout)
            if not login.task.done():
                raise AuthError(f"sign-in to MCP server {name!r} is still waiting for the browser")
        self.raise_if_failed(name, key)
        if login is not None and login.error:
            raise AuthError(login.error)

    async def _run(self, login: _Login, key: str, name: str, server: HttpServer) -> None:
        flow: Flow | None = None
        try:
            with anyio.CancelScope() as scope:
                scope.deadline = anyio.current_time() + server.request_timeout_ms / 1000
                flow = await self.hub.open_flow(oauth_settings(server).redirect_uri)
                await self._sign_in(login, key, name, server, flow, scope)
            if scope.cancelled_caught:
                raise AuthError("the sign-in timed out" if login.link else "preparing the authorization link timed out")
        except asyncio.CancelledError:
            login.cancelled = True
            login.error = "the sign-in was cancelled (sign-out or shutdown)"
            raise
        except Exception as error:  # noqa: BLE001 - every failure is latched as the sign-in's reason
            login.error = _describe(error)
            if not login.cancelled and self._generation.get(key, 0) == login.generation:
                keyring = isinstance(error, StoreError) and error.state in ("unavailable", "locked")
                self.failed[key] = (login.error, not keyring)
        finally:
            outcome = (f"Sign-in to MCP server {name!r} failed: {login.error}." if login.error
                       else f"Signed in to MCP server {name!r}.")
            if flow is not None:
                flow.finish(outcome)
                flow.end()
            if self._notifier is not None and login.link is not None and not login.cancelled:
                self._notifier.notify(outcome, "warning" if login.error else "info")
            login.ready.set()
            if self.logins.get(key) is login:
                del self.logins[key]

    async def _sign_in(
        self, login: _Login, key: str, name: str, server: HttpServer, flow: Flow, scope: anyio.CancelScope
    ) -> None:
        from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
        from mcp.shared.auth import OAuthClientMetadata
        from mcp_types.version import LATEST_HANDSHAKE_VERSION

        settings = oauth_settings(server)
        record = await self._store.load(key, name, server)  # a corrupt or foreign record stops here
        granted = record.tokens.scope if record is not None and record.tokens is not None else None
        storage = MemoryStorage(self._known_client(name, record, settings, flow.redirect_uri))
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
            secret = (self._env(name, settings.client_secret_env, "a client secret")
                      if settings.client_secret_env else None)
            return OAuthClientInformationFull(
                client_id=settings.client_id, client_secret=secret, redirect_uris=[redirect_uri],
                token_endpoint_auth_method="client_secret_basic" if secret else "none",
            )
        if record is not None and redirect_uri in record.client.get("redirect_uris", []):
            return OAuthClientInformationFull.model_validate(record.client)
        return None

    async def _accept_link(self, login: _Login, key: str, name: str, server: HttpServer, provider: Any,
                           storage: MemoryStorage, flow: Flow, url: str) -> None:
        """Bind the sign-in to its issuer, store the registration (read back), then publish the link."""
        context = provider.context
        metadata = context.oauth_metadata
        origin = context.get_authorization_base_url(server.url)
        issuer = str(metadata.issuer) if metadata is not None else origin
        configured = oauth_settings(server).issuer
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
        with_resource = context.should_include_resource_param(context.protocol_version)
        resource = context.get_resource_url() if with_resource else None
        record = SecureRecord(
            version=1, server=name, endpoint=server.url, issuer=issuer, token_endpoint=token_endpoint,
            resource=resource, client=storage.client_info.model_dump(mode="json", exclude_none=True),
            tokens=None, pending=login.flow_id, pending_pid=os.getpid(),
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
                             storage: MemoryStorage) -> None:
        tokens = stored_tokens(storage.tokens)
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
