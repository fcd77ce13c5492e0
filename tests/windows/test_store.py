"""Credentials and the credential lock on Windows: records live in Windows Credential Manager
(keyring's WinVaultKeyring, the seam's choice; Wine's own credential manager here), written,
read back and deleted; the cross-process lock (msvcrt.locking through the seam) is exclusive
between two Windows processes, says who holds it, and is never stolen."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import anyio

from windows_support import WINDOWS_ONLY

pytestmark = WINDOWS_ONLY

# Holds the credential lock of key `lock-test` until its stdin closes; says "held" once it has it.
HOLDER = """
import sys, anyio
from hostlink.mcp.auth.store import credential_lock
async def main():
    async with credential_lock("lock-test"):
        print("held", flush=True)
        await anyio.to_thread.run_sync(sys.stdin.read)
anyio.run(main)
"""
# Tries the same lock for at most 2 s; prints what happened.
TAKER = """
import anyio
from hostlink.mcp.auth.store import StoreError, credential_lock
async def main():
    try:
        async with credential_lock("lock-test", timeout=2):
            print("taken")
    except StoreError as error:
        print(error.state, error)
anyio.run(main)
"""


def test_the_store_is_windows_credential_manager_and_keeps_what_it_was_given():
    from keyring.backends.Windows import WinVaultKeyring

    from hostlink.mcp.auth.store import SecureRecord, SecureStore

    store = SecureStore()
    key = f"hostlink-lane-{uuid.uuid4().hex}"
    record = SecureRecord(version=1, server="lane", endpoint="https://mcp.example/mcp", issuer="https://id.example",
                          token_endpoint="https://id.example/token", client={"client_id": "c"})

    async def round_trip() -> tuple[str | None, str | None]:
        await store.save(key, record)  # reads it back itself, and fails when it differs
        kept = await store.read_raw(key)
        await store.delete(key)  # confirms with an independent read
        return kept, await store.read_raw(key)

    kept, after = anyio.run(round_trip)
    assert isinstance(store._open(), WinVaultKeyring)
    assert kept == record.model_dump_json() and after is None


def test_the_credential_lock_is_exclusive_between_two_processes(tmp_path):
    env = {**os.environ, "LOCALAPPDATA": str(tmp_path)}  # the lock folder: %LOCALAPPDATA%\hostlink\locks
    options = {"env": env, "text": True, "stderr": subprocess.PIPE, "stdout": subprocess.PIPE}
    holder = subprocess.Popen([sys.executable, "-c", HOLDER], stdin=subprocess.PIPE, **options)
    try:
        assert holder.stdout.readline().strip() == "held", holder.stderr.read() if holder.poll() is not None else ""
        taker = subprocess.run([sys.executable, "-c", TAKER], stdin=subprocess.DEVNULL, timeout=120, **options)
        assert taker.stdout.startswith(f"busy the credential lock is held by process {holder.pid} since"), taker
        holder.stdin.close()
        assert holder.wait(60) == 0, holder.stderr.read()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(60)
        holder.stdout.close()
        holder.stderr.close()
    taker = subprocess.run([sys.executable, "-c", TAKER], stdin=subprocess.DEVNULL, timeout=120, **options)
    assert taker.stdout.strip() == "taken", taker
    assert [p.name for p in (tmp_path / "hostlink" / "locks").iterdir()] == ["lock-test.lock"]


def test_a_holder_that_dies_releases_the_lock(tmp_path):
    """The system releases a dead holder's lock: no age rule is needed, and none steals."""
    env = {**os.environ, "LOCALAPPDATA": str(tmp_path)}
    options = {"env": env, "text": True, "stderr": subprocess.PIPE, "stdout": subprocess.PIPE}
    holder = subprocess.Popen([sys.executable, "-c", HOLDER], stdin=subprocess.PIPE, **options)
    try:
        assert holder.stdout.readline().strip() == "held"
        holder.kill()  # TerminateProcess: no cleanup of its own runs
        holder.wait(60)
    finally:
        for stream in (holder.stdin, holder.stdout, holder.stderr):
            stream.close()
    taker = subprocess.run([sys.executable, "-c", TAKER], stdin=subprocess.DEVNULL, timeout=120, **options)
    assert taker.stdout.strip() == "taken", taker
