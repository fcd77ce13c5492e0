"""The status page at `/` of both HTTP hosts (`hostlink serve`, `hostlink mcp serve --http`).

Three routes, answered here in front of the host's own app (every other path passes through):

- `GET /`: the page once signed in, the sign-in form otherwise (401);
- `POST /`: the sign-in form's answer. The right key sets a cookie and goes back to `/` (303);
  a wrong one gets the form again (401). After `FAILURES` wrong keys within `FAILURE_SECONDS`
  every sign-in gets the form with 429 until the oldest of them is that old (right key or not:
  the answer tells a guesser nothing). The key never travels in a URL;
- `GET /status.json`: what the page shows, polled by the page's own script (401 until signed
  in). `POST /sign-out` ends the sign-in.

The cookie (`HttpOnly`, `SameSite=Strict`, `Path=/`, 12 hours) holds its expiry and an HMAC of
it and the key under a secret this process made, never the key: it opens this page only (the
API still wants the key) and only until the process ends. Every route passes the host's Host
check; an `Origin` header is refused unless it names this very server (a browser sends one
with the form), and so is a request a browser marks as coming from another site
(`Sec-Fetch-Site`). The key and the cookie are compared in constant time.

The page is one document with no external asset: its style and script carry a nonce of their
own response under a Content-Security-Policy of `default-src 'none'`, with Trusted Types
required, so no string ever becomes markup. Everything shown that came from a client, a server
or Claude is set as text (`textContent`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import secrets
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any
from urllib.parse import parse_qs

from hostlink.serve.body import ClientGone, read_body
from hostlink.serve.core import ApiError
from hostlink.serve.status_page import page, sign_in_form

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
PAGE, DATA, SIGN_OUT = "/", "/status.json", "/sign-out"
ROUTES = (PAGE, DATA, SIGN_OUT)
RECENT = 50  # requests kept for the page
COOKIE_SECONDS = 12 * 3600
FORM_BYTES = 4096
FAILURES, FAILURE_SECONDS = 10, 60.0  # wrong keys a process takes in that many seconds
_SAME_SITE = (b"same-origin", b"none")  # `none`: typed, or from a bookmark
_TEXT = 200  # characters kept of any text from a client or a server


class Recent:
    """The last `RECENT` requests (or calls), newest first: plain values, text cut short."""

    def __init__(self, size: int = RECENT) -> None:
        self._rows: deque[dict[str, Any]] = deque(maxlen=size)

    def add(self, **row: Any) -> None:
        self._rows.appendleft({key: value[:_TEXT] if isinstance(value, str) else value for key, value in row.items()})

    def rows(self) -> list[dict[str, Any]]:
        return list(self._rows)


class StatusPage:
    """ASGI middleware: the page's routes, in front of `app`.

    `check(scope)` is the host's Host / Origin check that lets the server's own Origin pass (it
    raises `ApiError`); `snapshot()` is the JSON the page shows (see `status_page` for its
    keys)."""

    def __init__(self, app: Callable[..., Awaitable[None]], *, key: str, check: Callable[[Scope], None],
                 snapshot: Callable[[], dict[str, Any]], title: str) -> None:
        self.app = app
        self._key = key.encode()
        self._secret = secrets.token_bytes(32)
        self._check = check
        self._snapshot = snapshot
        self._title = title
        self._failures: deque[float] = deque()  # when the recent wrong keys came

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        route = (scope.get("method"), scope.get("path")) if scope["type"] == "http" else None
        if route not in (("GET", PAGE), ("POST", PAGE), ("GET", DATA), ("POST", SIGN_OUT)):
            await self.app(scope, receive, send)
            return
        method, path = route
        try:
            self._check(scope)
            if _header(scope, b"sec-fetch-site") not in (None, *_SAME_SITE):
                raise ApiError(403, "permission", "requests from another site are refused")
        except ApiError as refused:
            await _answer(send, refused.status, b"text/plain; charset=utf-8", refused.message.encode())
            return
        if path == DATA:
            await self._data(scope, send)
        elif path == SIGN_OUT:
            await _answer(send, 303, b"text/plain; charset=utf-8", b"", [
                (b"location", PAGE.encode()), (b"set-cookie", self._cookie(scope, "", 0))])
        elif method == "POST":
            await self._sign_in(scope, receive, send)
        elif self._signed_in(scope):
            nonce = secrets.token_urlsafe(18)
            await _html(send, 200, page(self._title, nonce), nonce)
        else:
            await self._form(send, 401, "")

    async def _data(self, scope: Scope, send: Send) -> None:
        if not self._signed_in(scope):
            await _answer(send, 401, b"application/json", b'{"error": "sign in at /"}')
            return
        body = json.dumps({"title": self._title, "now": time.time(), **self._snapshot()}, ensure_ascii=False)
        await _answer(send, 200, b"application/json", body.encode())

    async def _sign_in(self, scope: Scope, receive: Receive, send: Send) -> None:
        now = time.monotonic()
        while self._failures and now - self._failures[0] >= FAILURE_SECONDS:
            self._failures.popleft()
        if len(self._failures) >= FAILURES:
            wait = math.ceil(self._failures[0] + FAILURE_SECONDS - now)
            await self._form(send, 429, f"Too many wrong keys: try again in {wait} s.",
                             [(b"retry-after", str(wait).encode())])
            return
        try:
            body = bytes(await read_body(scope, receive, FORM_BYTES))
        except ClientGone:
            return
        except ApiError:
            await self._form(send, 413, "That is too long to be the key.")
            return
        sent = parse_qs(body.decode("utf-8", "replace"), max_num_fields=4).get("key", [""])[0].strip().encode()
        if not hmac.compare_digest(sent, self._key):
            self._failures.append(now)
            await self._form(send, 401, "That is not this server's key.")
            return
        expires = int(time.time()) + COOKIE_SECONDS
        await _answer(send, 303, b"text/plain; charset=utf-8", b"", [
            (b"location", PAGE.encode()), (b"set-cookie", self._cookie(scope, self._token(expires), COOKIE_SECONDS))])

    async def _form(self, send: Send, status: int, problem: str,
                    headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
        nonce = secrets.token_urlsafe(18)
        await _html(send, status, sign_in_form(self._title, nonce, problem), nonce, headers)

    def _token(self, expires: int) -> str:
        mac = hmac.new(self._secret, str(expires).encode() + b"\0" + self._key, hashlib.sha256).hexdigest()
        return f"{expires}.{mac}"

    def _signed_in(self, scope: Scope) -> bool:
        sent = _cookies(scope).get(_cookie_name(scope), "")
        expires, _, _mac = sent.partition(".")
        if not (expires.isascii() and expires.isdigit()) or len(expires) > 12 or int(expires) < time.time():
            return False
        return hmac.compare_digest(sent.encode(), self._token(int(expires)).encode())

    def _cookie(self, scope: Scope, value: str, seconds: int) -> bytes:
        return (f"{_cookie_name(scope)}={value}; Max-Age={seconds}; Path=/; HttpOnly; SameSite=Strict").encode()


def _cookie_name(scope: Scope) -> str:
    """One cookie per port: cookies do not tell ports apart, and two servers may run."""
    server = scope.get("server") or (None, None)
    return f"hostlink_status_{server[1] or 0}"


def _cookies(scope: Scope) -> dict[str, str]:
    found: dict[str, str] = {}
    for key, value in scope.get("headers", ()):
        if key.lower() == b"cookie":
            for pair in value.decode("latin-1").split(";"):
                name, _, sent = pair.strip().partition("=")
                found.setdefault(name, sent)
    return found


def _header(scope: Scope, name: bytes) -> bytes | None:
    return next((value.lower() for key, value in scope.get("headers", ()) if key.lower() == name), None)


def _policy(nonce: str) -> bytes:
    return (f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; connect-src 'self'; "
            "img-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; "
            "require-trusted-types-for 'script'; trusted-types 'none'").encode()


async def _html(send: Send, status: int, document: str, nonce: str,
                headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    await _answer(send, status, b"text/html; charset=utf-8", document.encode(),
                  [(b"content-security-policy", _policy(nonce)), (b"x-frame-options", b"DENY"),
                   (b"cross-origin-opener-policy", b"same-origin"), *headers])


async def _answer(send: Send, status: int, kind: bytes, body: bytes,
                  headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", kind), (b"content-length", str(len(body)).encode()), (b"cache-control", b"no-store"),
        (b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"same-origin"),
        (b"cross-origin-resource-policy", b"same-origin"), *headers]})
    await send({"type": "http.response.body", "body": body})
