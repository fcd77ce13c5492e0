"""Private runtime state: 0700 directories, 0600 files, and recovery of our own leftovers.

Every directory hostlink creates carries a marker (package, owner pid, creation time), so a
later process can tell its own abandoned directories from anything else in the temp root
and never removes what it did not make. On Windows the per-user temp root's ACL keeps the
state private and there is no automatic recovery (`hostlink.host.platform.files`).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
import time
from io import BufferedWriter
from pathlib import Path
from typing import Any

from hostlink.host.platform.files import (
    CLOEXEC,
    NOFOLLOW,
    STALE_RECOVERY,
    owned_by_user,
    private_mode,
    runtime_dir_name,
)

PACKAGE = "hostlink"
MARKER = ".hostlink-owner.json"
_MARKER_MAX_BYTES = 4096
_RECOVERY_SCAN_LIMIT = 256
STALE_AFTER_SECONDS = 60.0


class PrivateStateError(RuntimeError):
    """The private root or a private file is not what hostlink requires."""


def runtime_root() -> Path:
    """The per-user root of hostlink's private directories (created 0700 on first use).

    `HOSTLINK_RUNTIME_DIR` overrides it (tests, sandboxes); otherwise
    `$XDG_RUNTIME_DIR/hostlink` or `<tempdir>/hostlink-<uid>` (`<tempdir>\\hostlink` on
    Windows, whose temp directory is the user's own).
    """
    override = os.environ.get("HOSTLINK_RUNTIME_DIR")
    if override:
        root = Path(override)
    elif os.environ.get("XDG_RUNTIME_DIR"):
        root = Path(os.environ["XDG_RUNTIME_DIR"]) / PACKAGE
    else:
        root = Path(tempfile.gettempdir()) / runtime_dir_name(PACKAGE)
    ensure_private_dir(root)
    return root


def ensure_private_dir(path: Path) -> None:
    """Create `path` as a 0700 directory if needed; refuse a link or another user's dir."""
    try:
        path.mkdir(mode=0o700, parents=False, exist_ok=False)
    except FileExistsError:
        pass
    except FileNotFoundError:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.mkdir(mode=0o700, exist_ok=True)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise PrivateStateError("the hostlink runtime directory is not a real directory")
    if not owned_by_user(info):
        raise PrivateStateError("the hostlink runtime directory belongs to another user")
    if not private_mode(info):
        os.chmod(path, 0o700)


def create_private_dir(kind: str, root: Path | None = None) -> Path:
    """Create a fresh, randomly named 0700 directory with an ownership marker."""
    parent = root if root is not None else runtime_root()
    path = Path(tempfile.mkdtemp(prefix=f"{kind}-", dir=parent))
    marker = {"package": PACKAGE, "pid": os.getpid(), "created": time.time()}
    write_private_file(path, MARKER, json.dumps(marker))
    return path


def open_private_file(directory: Path, name: str) -> BufferedWriter:
    """Open a new file `directory/name` for binary writing: exclusive, 0600, no symlinks."""
    if "/" in name or "\\" in name or name in ("", ".", ".."):
        raise PrivateStateError("a private file name must be a plain name")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | CLOEXEC | getattr(os, "O_BINARY", 0)
    return os.fdopen(os.open(directory / name, flags, 0o600), "wb")


def write_private_file(directory: Path, name: str, data: bytes | str) -> Path:
    """Create `directory/name` holding `data` (see `open_private_file`)."""
    with open_private_file(directory, name) as handle:
        handle.write(data.encode("utf-8") if isinstance(data, str) else data)
    return directory / name


def replace_private_file(directory: Path, name: str, data: bytes | str) -> Path:
    """Atomically replace `directory/name` with a new 0600 file holding `data`.

    For small state files that are rewritten (diagnostic reports, last-request metrics):
    the data goes to a fresh exclusive file first, so a reader never sees a partial write
    and a symlink planted at `name` is replaced, not followed.
    """
    temporary = f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    write_private_file(directory, temporary, data)
    try:
        os.replace(directory / temporary, directory / name)
    except OSError:
        os.unlink(directory / temporary)
        raise
    return directory / name


def remove_private_dir(path: Path) -> None:
    """Remove a directory this process created; missing is fine, anything else raises."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode) or not owned_by_user(info):
        raise PrivateStateError("refusing to remove a path that is not our private directory")
    shutil.rmtree(path)


def read_private_json(path: Path, max_bytes: int) -> Any:
    """The JSON value in `path` (never through a symlink), or None when the file is
    missing, unreadable, larger than `max_bytes` or not JSON."""
    try:
        fd = os.open(path, os.O_RDONLY | NOFOLLOW | getattr(os, "O_BINARY", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        raw = handle.read(max_bytes + 1)
    if len(raw) > max_bytes:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def read_marker(path: Path) -> dict[str, Any] | None:
    """The ownership marker of `path` if it is a valid hostlink marker, else None."""
    marker = read_private_json(path / MARKER, _MARKER_MAX_BYTES)
    if not isinstance(marker, dict) or marker.get("package") != PACKAGE:
        return None
    pid, created = marker.get("pid"), marker.get("created")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return None
    if not isinstance(created, (int, float)) or isinstance(created, bool):
        return None
    return marker


def recover_stale(root: Path | None = None) -> int:
    """Remove abandoned hostlink directories; returns how many were removed.

    Only same-user, real (not symlinked) directories with a valid marker that is older than
    `STALE_AFTER_SECONDS` and whose recorded process is gone. The scan is bounded. Never on
    Windows, where nothing tells our leftovers from another's (see the module docstring).
    """
    from hostlink.host.platform.processes import process_alive  # anyio: not at registration

    if not STALE_RECOVERY:
        return 0
    parent = root if root is not None else runtime_root()
    removed = 0
    now = time.time()
    try:
        entries = os.scandir(parent)
    except FileNotFoundError:
        return 0
    with entries:
        for count, entry in enumerate(entries):
            if count >= _RECOVERY_SCAN_LIMIT:
                break
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if not stat.S_ISDIR(info.st_mode) or not owned_by_user(info):
                continue
            marker = read_marker(Path(entry.path))
            if marker is None or marker["pid"] == os.getpid():
                continue
            if now - marker["created"] < STALE_AFTER_SECONDS or process_alive(marker["pid"]):
                continue
            shutil.rmtree(entry.path, ignore_errors=True)
            if not os.path.lexists(entry.path):
                removed += 1
    return removed
