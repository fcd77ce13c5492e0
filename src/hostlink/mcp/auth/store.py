"""Secure credential records in the OS keyring, and the cross-process credential lock.

Records live only in the operating system's keyring (Secret Service on Linux, the native
store on macOS and Windows); there is no plaintext, null or in-memory fallback. A record is
keyed by a hash of the server name, endpoint and OAuth settings, bound to the exact issuer
that issued it, versioned, and validated on every read. Every write is read back; every
deletion is confirmed by an independent read. Keyring states that are not "no record"
(unavailable, locked, corrupt, a record for something else) are reported as themselves.

The lock file holds no secret: it only serializes credential transactions (sign-in
completion, refresh, sign-out) between processes. It is never stolen by age.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, closing
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

import anyio
import anyio.to_thread
from pydantic import BaseModel, ConfigDict, ValidationError

from hostlink.host.platform.credentials import native_keyring
from hostlink.host.platform.files import CLOEXEC, NOFOLLOW, owned_by_user, private_mode, read_at, write_at
from hostlink.host.platform.folders import state_home
from hostlink.host.platform.locks import try_lock, unlock
from hostlink.host.platform.processes import process_alive
from hostlink.host.private import PrivateStateError, ensure_private_dir
from hostlink.mcp.errors import AuthError

if TYPE_CHECKING:
    from keyring.backend import KeyringBackend

SERVICE = "hostlink.mcp"
RECORD_VERSION = 1
MAX_RECORD_CHARS = 256 * 1024
LOCK_TIMEOUT_SECONDS = 30.0
EXPIRY_SKEW_SECONDS = 30.0  # a token this close to its expiry counts as expired
_LOCK_POLL_SECONDS = 0.05
_MAX_DUPLICATES = 16

# "lock": the lock directory or file is unsafe; "busy": another process holds the lock.
StoreState = Literal["unavailable", "locked", "ambiguous", "corrupt", "mismatch", "unverified", "lock", "busy"]


class StoreError(AuthError):
    """The keyring or the credential lock is not usable; `state` says how (never "absent")."""

    def __init__(self, state: StoreState, message: str) -> None:
        super().__init__(message)
        self.state = state


class StoredTokens(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    access_token: str
    token_type: str = "Bearer"
    refresh_token: str | None = None
    scope: str | None = None
    expires_at: float | None = None


class SecureRecord(BaseModel):
    """What the keyring holds for one server: its client registration and tokens.

    `pending` names the sign-in flow in progress; its completion is accepted only while the
    record still names it, so a sign-out or a newer sign-in (in any process) voids it.
    `pending_pid` is the process whose callback listener waits for it: once that process is
    gone, nobody can complete it.
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    version: Literal[1]
    server: str
    endpoint: str
    issuer: str
    token_endpoint: str
    resource: str | None = None
    client: dict[str, Any]
    tokens: StoredTokens | None = None
    pending: str | None = None
    pending_pid: int | None = None


def record_key(name: str, server: Any) -> str:
    """The keyring entry name: a hash of server name, endpoint and OAuth settings."""
    oauth = server.oauth.model_dump(mode="json", by_alias=True) if server.oauth else None
    material = {"name": name, "url": server.url, "auth": server.auth, "oauth": oauth}
    digest = hashlib.sha256(json.dumps(material, sort_keys=True).encode("utf-8")).hexdigest()
    return f"oauth-{digest}"


def expired(tokens: StoredTokens) -> bool:
    return tokens.expires_at is not None and time.time() >= tokens.expires_at - EXPIRY_SKEW_SECONDS


async def stored_state(store: SecureStore, key: str, name: str, server: Any) -> str:
    """A link sign-in's state as the keyring records it, for status: no session, no connection
    (`hostlink mcp status` reads it without starting the MCP runtime)."""
    try:
        record = await store.load(key, name, server)
    except StoreError as error:
        return {"unavailable": "keyring unavailable", "locked": "keyring locked", "ambiguous": "keyring ambiguous",
                "corrupt": "record corrupt",
                "mismatch": "record mismatch"}.get(error.state, "keyring unavailable")
    if record is None or record.tokens is None:
        waiting = record is not None and record.pending and record.pending_pid and process_alive(record.pending_pid)
        return "pending link" if waiting else "signed out"  # a link nobody waits for is no sign-in
    if not expired(record.tokens):
        return "signed in"
    return "refreshable" if record.tokens.refresh_token else "expired"


def _keyring_class() -> type[KeyringBackend]:
    """The native keyring backend of this platform; nothing else is ever used."""
    keyring = native_keyring()
    if keyring is None:
        raise StoreError("unavailable", "no supported OS keyring on this platform")
    return keyring


# One keyring conversation at a time in this process. gnome-keyring-daemon 42 aborts on a GLib
# assertion (`invoke_get_property_in_idle_cb`), or answers "Item does not exist", when connections
# of one process ask at once, as ten concurrent first calls of one server do; one at a time it
# does neither, and each conversation takes milliseconds.
_ONE_AT_A_TIME = threading.Lock()


def _classify(error: BaseException) -> StoreError:
    """A backend failure as a StoreError saying what is missing and how to fix it (runs in
    the worker thread: finding out asks the session bus)."""
    from keyring.errors import KeyringLocked

    from hostlink.mcp.auth.keyring_advice import LOCKED_REASON, unavailable_reason

    if isinstance(error, StoreError):
        return error
    if isinstance(error, KeyringLocked):
        return StoreError("locked", f"{LOCKED_REASON}; hostlink keeps credentials only in the OS keyring, so "
                                    "none were read or written")
    return StoreError("unavailable", f"the OS keyring is unavailable: {unavailable_reason()}; hostlink keeps "
                                     "credentials only in the OS keyring, so none were read or written")


class SecureStore:
    """Keyring access for credential records; every call runs in a worker thread."""

    def __init__(self) -> None:
        self._backend: KeyringBackend | None = None

    def _open(self) -> KeyringBackend:
        if self._backend is None:
            cls = _keyring_class()
            _ = cls.priority  # raises when the backend cannot work here (no daemon, no bus)
            self._backend = cls()
        return self._backend

    def _call(self, method: str, *args: str) -> object:
        try:
            with _ONE_AT_A_TIME:
                return getattr(self._open(), method)(SERVICE, *args)
        except Exception as error:  # noqa: BLE001 - every backend failure is classified, never "absent"
            raise _classify(error) from None

    def _get(self, key: str) -> str | None:
        """One record, or None; two Secret Service items for one key are refused as ambiguous."""
        try:
            from keyring.backends.SecretService import Keyring as SecretServiceKeyring

            with _ONE_AT_A_TIME:
                backend = self._open()
                if not isinstance(backend, SecretServiceKeyring):  # macOS/Windows: one entry per key
                    return backend.get_password(SERVICE, key)
                collection = backend.get_preferred_collection()
                with closing(collection.connection):
                    items = list(collection.search_items(backend._query(SERVICE, key)))
                    if len(items) > 1:
                        raise StoreError("ambiguous", "the OS keyring holds more than one credential record for this "
                                                      "server; none was used (sign out to remove them)")
                    if not items:
                        return None
                    backend.unlock(items[0])
                    secret: bytes = items[0].get_secret()
                    return secret.decode("utf-8")
        except Exception as error:  # noqa: BLE001 - every backend failure is classified, never "absent"
            raise _classify(error) from None

    async def read_raw(self, key: str) -> str | None:
        return await anyio.to_thread.run_sync(self._get, key)

    async def load(self, key: str, name: str, server: Any) -> SecureRecord | None:
        """The record for `key`, validated and bound to `name`/`server`; None when absent."""
        raw = await self.read_raw(key)
        if raw is None:
            return None
        record = parse_record(raw)
        check_binding(record, name, server)
        return record

    async def save(self, key: str, record: SecureRecord) -> None:
        """Write `record` and read it back; a lost or changed write fails closed."""
        text = record.model_dump_json()
        if len(text) > MAX_RECORD_CHARS:
            raise StoreError("unverified", "the credential record is too large to store")
        await anyio.to_thread.run_sync(self._call, "set_password", key, text)
        if await self.read_raw(key) != text:
            raise StoreError("unverified", "the OS keyring did not keep the credential record as written")

    async def delete(self, key: str) -> None:
        """Delete the record and confirm with an independent read that it is gone."""
        from keyring.errors import PasswordDeleteError

        def remove() -> None:
            try:
                with _ONE_AT_A_TIME:
                    for _ in range(_MAX_DUPLICATES):  # duplicates (an ambiguous record) go too
                        self._open().delete_password(SERVICE, key)
            except PasswordDeleteError:
                pass  # none (left); the read below confirms it
            except Exception as error:  # noqa: BLE001 - classified like every backend failure
                raise _classify(error) from None

        await anyio.to_thread.run_sync(remove)
        if await self.read_raw(key) is not None:
            raise StoreError("unverified", "the OS keyring still holds the credential record after deletion")


def parse_record(raw: str) -> SecureRecord:
    """Validate a stored record; a corrupt one is refused (and left in place)."""
    if len(raw) > MAX_RECORD_CHARS:
        raise StoreError("corrupt", _CORRUPT)
    try:
        return SecureRecord.model_validate_json(raw)
    except ValidationError:
        raise StoreError("corrupt", _CORRUPT) from None


_CORRUPT = (
    "the stored credential record is corrupt or from an unknown version; it was kept, not used "
    "(sign out to remove it)"
)


def same_issuer(a: str, b: str) -> bool:
    """RFC 8414 issuer identity: exact, except that a root issuer may end in "/" or not."""
    return _root_form(a) == _root_form(b)


def _root_form(issuer: str) -> str:
    parts = urlsplit(issuer)
    return issuer[:-1] if parts.path == "/" and not parts.query else issuer


def check_binding(record: SecureRecord, name: str, server: Any) -> None:
    """A record is only used for the exact server, endpoint and issuer it was made for."""
    configured_issuer = server.oauth.issuer if server.oauth else None
    client_issuer = record.client.get("issuer")
    if (
        record.server != name
        or record.endpoint != server.url
        or (configured_issuer is not None and not same_issuer(record.issuer, configured_issuer))
        or (client_issuer is not None and not same_issuer(str(client_issuer), record.issuer))
    ):
        raise StoreError(
            "mismatch", "the stored credential record belongs to another server or issuer; it was not used"
        )


# --- the cross-process credential lock ---------------------------------------------------


def lock_dir() -> Path:
    """`$XDG_STATE_HOME/hostlink/locks` (`%LOCALAPPDATA%\\hostlink\\locks` on Windows; 0700,
    ours, not a symlink)."""
    root = state_home(os.environ) / "hostlink"
    try:
        ensure_private_dir(root)
        ensure_private_dir(root / "locks")
    except (OSError, PrivateStateError) as error:
        raise StoreError("lock", f"the credential lock directory is unusable ({type(error).__name__})") from None
    return root / "locks"


def _open_lock_file(path: Path) -> int:
    flags = os.O_RDWR | os.O_CREAT | NOFOLLOW | CLOEXEC | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as error:
        code = errno.errorcode.get(error.errno or 0, "error")
        raise StoreError("lock", f"the credential lock file is unusable ({code})") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or not owned_by_user(info) or not private_mode(info):
        os.close(fd)
        raise StoreError("lock", "the credential lock file is not a private regular file of this user")
    return fd


def _holder(fd: int) -> str:
    try:
        data = json.loads(read_at(fd, 256, 0) or b"{}")
        return f"process {int(data['pid'])} since {time.strftime('%H:%M:%S', time.localtime(float(data['time'])))}"
    except (ValueError, KeyError, TypeError, OSError):
        return "another process"


@asynccontextmanager
async def credential_lock(key: str, timeout: float = LOCK_TIMEOUT_SECONDS) -> AsyncIterator[None]:
    """Hold the exclusive credential lock for `key`; waits (never steals) up to `timeout`."""
    fd = _open_lock_file(lock_dir() / f"{key}.lock")
    try:
        deadline = time.monotonic() + timeout
        while True:
            if try_lock(fd):
                break
            if time.monotonic() >= deadline:
                raise StoreError("busy", f"the credential lock is held by {_holder(fd)}; try again later") from None
            await anyio.sleep(_LOCK_POLL_SECONDS)
        try:
            os.ftruncate(fd, 0)
            write_at(fd, json.dumps({"pid": os.getpid(), "time": time.time()}).encode(), 0)
            yield
        finally:
            os.ftruncate(fd, 0)
            unlock(fd)
    finally:
        os.close(fd)
