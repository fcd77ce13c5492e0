"""A fake OAuth authorization server plus an SDK MCP server that requires its tokens.

Run as `python tests/fakes/fake_oauth_server.py`; both listen on 127.0.0.1 (ephemeral
ports) and the first stdout line is JSON `{"issuer": AS_URL, "mcp": MCP_URL}`.

Authorization server (AS_URL): RFC 8414 metadata, dynamic registration (`/register`),
`/authorize` (auto-approves: 302 to the redirect URI with code, state and `iss`),
`/token` (authorization_code with PKCE S256, refresh_token with rotation,
client_credentials with client_secret_basic for client `machine`/`machine-secret`, or with a
private_key_jwt assertion (RFC 7523) for client `jwt-machine`, checked with the public key
`assertion_key` set through `/_control` (with `assertion_alg` and, if set, `assertion_kid`)).
`GET /_counters` answers the request counters; `POST /_control` (JSON) changes behaviour:
`access_expires_in` / `refresh_expires_in` (seconds for tokens from a code / from a
refresh), `metadata_issuer` (the issuer the metadata claims), `token_error` (the next
code exchange answers 400 with this error and a hostile description), `token_bloat` (code
exchanges answer a 2 MiB body), `refresh_delay` (seconds a refresh waits before
answering), `revoke_access` (true: every access token issued so far stops working),
`require_scope` (a scope the MCP server then asks for with 403 insufficient_scope),
`revocation` (`"ok"`: `/revoke` revokes per RFC 7009 and counts each token type in
`revoked`, in order; `"none"`: the metadata names no revocation endpoint; `"error"`: it
answers 500; `"hang"`: it never answers in time; `"cleartext"`: the metadata names an http
endpoint on a non-loopback host), `authorization_query` (a query the metadata's authorization endpoint
carries, e.g. a `state` of its own), `refresh_answer` (`[status, body]`: what the next refresh answers
instead, as JSON); `reset` (true, applied first: counters, clients, codes, tokens and every
setting as a fresh server has them, so that the tests of a module can share one server).

MCP server (MCP_URL, path `/mcp`): the SDK `MCPServer` with protected-resource metadata
naming AS_URL, accepting only live access tokens; tool `whoami` answers the token's client.
Any path below it (`/mcp/<tag>`) is the same endpoint, with the same protected-resource metadata:
tests sharing one server each use a URL of their own, since hostlink keys keyring entries and lock
files by the server URL.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import re
import secrets
import socket
import sys
import time
from urllib.parse import urlencode


def _bind() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    return sock


class State:
    def __init__(self, issuer: str) -> None:
        self.issuer = issuer
        self.reset()

    def reset(self) -> None:
        """Everything but the issuer as a fresh server has it."""
        self.clients: dict[str, dict] = {"machine": {"client_secret": "machine-secret", "redirect_uris": []}}
        self.codes: dict[str, dict] = {}
        self.access: dict[str, dict] = {}
        self.refresh: dict[str, dict] = {}
        self.counters = {"metadata": 0, "register": 0, "authorize": 0, "token_code": 0, "token_refresh": 0,
                         "token_client_credentials": 0, "token_client_assertion": 0, "token_failed": 0,
                         "mcp_authorized": 0, "revoked": []}
        self.control = {"access_expires_in": 3600, "refresh_expires_in": 3600, "metadata_issuer": None,
                        "token_error": None, "token_bloat": False, "refresh_delay": 0, "require_scope": None,
                        "assertion_key": None, "assertion_alg": "ES256", "assertion_kid": None,
                        "revocation": "ok", "authorization_query": None,
                        "refresh_answer": None}
        self.assertion_ids: set[str] = set()  # jti values seen: an assertion is good for one request

    def issue(self, client_id: str, expires_in: int, scope: str | None, refresh: bool = True) -> dict:
        access = secrets.token_urlsafe(24)
        self.access[access] = {"client_id": client_id, "expires_at": time.time() + expires_in, "scope": scope}
        body = {"access_token": access, "token_type": "Bearer", "expires_in": expires_in}
        if scope:
            body["scope"] = scope
        if refresh:
            token = secrets.token_urlsafe(24)
            self.refresh[token] = {"client_id": client_id, "access": access, "scope": scope}
            body["refresh_token"] = token
        return body


JWT_BEARER = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


def verified_assertion(state: State, assertion: str) -> dict | None:
    """The claims of a client assertion signed by the configured public key for this issuer, or None."""
    import jwt

    key, kid = state.control["assertion_key"], state.control["assertion_kid"]
    try:
        if key is None or (kid is not None and jwt.get_unverified_header(assertion).get("kid") != kid):
            return None
        claims = jwt.decode(assertion, key, algorithms=[state.control["assertion_alg"]], audience=state.issuer,
                            issuer="jwt-machine", options={"require": ["exp", "iat", "jti", "sub"]})
    except jwt.PyJWTError:
        return None
    if claims["sub"] != "jwt-machine" or claims["jti"] in state.assertion_ids:
        return None
    state.assertion_ids.add(claims["jti"])
    return claims


def build_as(state: State):
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse
    from starlette.routing import Route

    def error(code: str, status: int = 400, description: str | None = None) -> JSONResponse:
        state.counters["token_failed"] += 1
        body = {"error": code}
        if description:
            body["error_description"] = description
        return JSONResponse(body, status_code=status)

    async def metadata(request: Request):
        state.counters["metadata"] += 1
        base = state.issuer
        endpoint = {"none": None, "cleartext": "http://revoke.example/revoke"}.get(state.control["revocation"],
                                                                                  f"{base}/revoke")
        revocation = {"revocation_endpoint": endpoint} if endpoint else {}
        return JSONResponse({**revocation,
            "issuer": state.control["metadata_issuer"] or base,
            "authorization_endpoint": f"{base}/authorize" + (f"?{query}" if (query := state.control[
                "authorization_query"]) else ""),
            "token_endpoint": f"{base}/token",
            "registration_endpoint": f"{base}/register",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "private_key_jwt"],
            "token_endpoint_auth_signing_alg_values_supported": ["RS256", "ES256"],
            "authorization_response_iss_parameter_supported": True,
        })

    async def register(request: Request):
        state.counters["register"] += 1
        body = await request.json()
        client_id = "client-" + secrets.token_hex(6)
        state.clients[client_id] = {"client_secret": None, "redirect_uris": body.get("redirect_uris", [])}
        return JSONResponse({**body, "client_id": client_id, "token_endpoint_auth_method": "none",
                             "client_id_issued_at": int(time.time())}, status_code=201)

    async def authorize(request: Request):
        state.counters["authorize"] += 1
        q = request.query_params
        client = state.clients.get(q.get("client_id", ""))
        if client is None or q.get("redirect_uri") not in client["redirect_uris"]:
            return PlainTextResponse("unknown client or redirect_uri", status_code=400)
        if q.get("code_challenge_method") != "S256" or not q.get("code_challenge") or not q.get("state"):
            return PlainTextResponse("PKCE S256 and state required", status_code=400)
        code = secrets.token_urlsafe(16)
        state.codes[code] = {"client_id": q["client_id"], "redirect_uri": q["redirect_uri"],
                             "challenge": q["code_challenge"], "scope": q.get("scope")}
        target = q["redirect_uri"] + "?" + urlencode({"code": code, "state": q["state"], "iss": state.issuer})
        return RedirectResponse(target, status_code=302)

    async def token(request: Request):
        form = await request.form()
        grant = form.get("grant_type")
        if grant == "authorization_code":
            state.counters["token_code"] += 1
            if state.control["token_error"]:
                code, state.control["token_error"] = state.control["token_error"], None
                return error(code, description="\x1b[31mHOSTILE\x1b]0;title\x07 " + "x" * 5000)
            if state.control["token_bloat"]:
                return JSONResponse({"access_token": "x" * (2 * 1024 * 1024), "token_type": "Bearer"})
            entry = state.codes.pop(form.get("code", ""), None)
            if entry is None or entry["client_id"] != form.get("client_id") \
                    or entry["redirect_uri"] != form.get("redirect_uri"):
                return error("invalid_grant")
            digest = hashlib.sha256(form.get("code_verifier", "").encode()).digest()
            if base64.urlsafe_b64encode(digest).decode().rstrip("=") != entry["challenge"]:
                return error("invalid_grant")
            return JSONResponse(state.issue(entry["client_id"], state.control["access_expires_in"], entry["scope"]))
        if grant == "refresh_token":
            state.counters["token_refresh"] += 1
            if state.control["refresh_answer"]:
                (status, body), state.control["refresh_answer"] = state.control["refresh_answer"], None
                return PlainTextResponse(body, status_code=status, media_type="application/json")
            if state.control["refresh_delay"]:
                await asyncio.sleep(state.control["refresh_delay"])
            entry = state.refresh.pop(form.get("refresh_token", ""), None)
            if entry is None or entry["client_id"] != form.get("client_id"):
                return error("invalid_grant")
            state.access.pop(entry["access"], None)
            return JSONResponse(state.issue(entry["client_id"], state.control["refresh_expires_in"], entry["scope"]))
        if grant == "client_credentials" and form.get("client_assertion_type") == JWT_BEARER:
            state.counters["token_client_assertion"] += 1
            if verified_assertion(state, form.get("client_assertion", "")) is None:
                return error("invalid_client", 401)
            return JSONResponse(state.issue("jwt-machine", 3600, form.get("scope"), refresh=False))
        if grant == "client_credentials":
            state.counters["token_client_credentials"] += 1
            expected = "Basic " + base64.b64encode(b"machine:machine-secret").decode()
            if request.headers.get("authorization") != expected:
                return error("invalid_client", 401)
            return JSONResponse(state.issue("machine", 3600, form.get("scope"), refresh=False))
        return error("unsupported_grant_type")

    async def revoke(request: Request):
        """RFC 7009: the client's own token is revoked (200 even when it is unknown)."""
        if state.control["revocation"] == "hang":
            await asyncio.sleep(60)
        if state.control["revocation"] == "error":
            return JSONResponse({"error": "server_error", "error_description": "\x1b[31mHOSTILE"}, status_code=500)
        form = await request.form()
        token, hint = form.get("token", ""), form.get("token_type_hint")
        table = state.refresh if token in state.refresh else state.access
        entry = table.get(token)
        if entry is not None and entry["client_id"] != form.get("client_id"):
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        if table.pop(token, None) is not None:
            state.counters["revoked"].append(hint)
        return PlainTextResponse("")

    async def counters(request: Request):
        return JSONResponse(state.counters)

    async def control(request: Request):
        changes = await request.json()
        if changes.pop("reset", False):
            state.reset()
        if changes.pop("revoke_access", False):
            state.access.clear()
        state.control.update(changes)
        return JSONResponse(state.control)

    return Starlette(routes=[
        Route("/.well-known/oauth-authorization-server", metadata),
        Route("/register", register, methods=["POST"]),
        Route("/authorize", authorize),
        Route("/token", token, methods=["POST"]),
        Route("/revoke", revoke, methods=["POST"]),
        Route("/_counters", counters),
        Route("/_control", control, methods=["POST"]),
    ])


_BELOW_MCP = re.compile(r"^((?:/\.well-known/oauth-protected-resource)?/mcp)/.+")


def build_mcp(state: State, mcp_url: str):
    from mcp.server.auth.middleware.auth_context import get_access_token
    from mcp.server.auth.provider import AccessToken
    from mcp.server.auth.settings import AuthSettings
    from mcp.server.mcpserver import MCPServer

    class Verifier:
        async def verify_token(self, token: str):
            entry = state.access.get(token)
            if entry is None or entry["expires_at"] < time.time() - 60:
                return None
            state.counters["mcp_authorized"] += 1
            return AccessToken(token=token, client_id=entry["client_id"], scopes=[], expires_at=None)

    server = MCPServer(
        "fake-oauth-protected",
        token_verifier=Verifier(),
        auth=AuthSettings(issuer_url=state.issuer, resource_server_url=mcp_url, validate_token_resource=False),
    )

    @server.tool(description="Name the OAuth client of the calling token.")
    def whoami() -> str:
        token = get_access_token()
        return f"client {token.client_id if token else 'none'}"

    app = server.streamable_http_app(stateless_http=True)

    async def step_up(scope, receive, send):
        """403 insufficient_scope for a live token without the required scope; any path below
        `/mcp/` is `/mcp` itself, and so for its protected-resource metadata."""
        if scope["type"] == "http" and (base := _BELOW_MCP.match(scope["path"])):
            scope = {**scope, "path": base[1], "raw_path": base[1].encode()}
        needed = state.control["require_scope"]
        if scope["type"] == "http" and needed:
            header = dict(scope["headers"]).get(b"authorization", b"").decode()
            entry = state.access.get(header.removeprefix("Bearer "))
            if entry is not None and needed not in (entry["scope"] or "").split():
                challenge = f'Bearer error="insufficient_scope", scope="{needed}"'.encode()
                await send({"type": "http.response.start", "status": 403,
                            "headers": [(b"www-authenticate", challenge), (b"content-type", b"text/plain")]})
                await send({"type": "http.response.body", "body": b"insufficient scope\n"})
                return
        await app(scope, receive, send)

    return step_up


async def serve() -> None:
    import uvicorn

    as_sock, mcp_sock = _bind(), _bind()
    issuer = f"http://127.0.0.1:{as_sock.getsockname()[1]}"
    mcp_url = f"http://127.0.0.1:{mcp_sock.getsockname()[1]}/mcp"
    state = State(issuer)
    servers = [
        # a hanging revocation must not hold the shutdown
        uvicorn.Server(uvicorn.Config(build_as(state), log_level="warning", lifespan="off",
                                      timeout_graceful_shutdown=1)),
        uvicorn.Server(uvicorn.Config(build_mcp(state, mcp_url), log_level="warning")),
    ]
    print(json.dumps({"issuer": issuer, "mcp": mcp_url}), flush=True)
    await asyncio.gather(servers[0].serve(sockets=[as_sock]), servers[1].serve(sockets=[mcp_sock]))


if __name__ == "__main__":
    import warnings

    warnings.simplefilter("ignore")
    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        sys.exit(0)
