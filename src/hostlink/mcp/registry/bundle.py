"""An MCPB bundle from the registry: downloaded only to be verified, unpacked only once it is.

The bundle's bytes must hash to the record's `fileSha256` before anything is unpacked; a
mismatch removes the download and refuses the bundle. A verified bundle is unpacked into
`<state home>/hostlink/mcpb/<sha256>` (content-addressed, so the same bundle is installed once),
refusing members that would land outside it, links, and archives that unpack past their bounds.
Its `manifest.json` names the command (`server.mcp_config`); `${__dirname}` becomes the
directory, and any other `${…}` (such as `${user_config.…}`) is refused rather than guessed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

import anyio

from hostlink.host.platform.folders import state_home
from hostlink.host.private import open_private_file
from hostlink.mcp.errors import McpError
from hostlink.mcp.registry.client import REQUEST_SECONDS, RegistryError
from hostlink.mcp.registry.text import checked_argv

MAX_BUNDLE_BYTES = 256 * 1024 * 1024
MAX_UNPACKED_BYTES = 1024 * 1024 * 1024
MAX_MEMBERS = 20000
MAX_MANIFEST_BYTES = 1024 * 1024
SHA256 = re.compile(r"[0-9a-f]{64}")
DIRNAME = re.compile(r"\$\{(?:__dirname)\}")


def bundles_home(environ: Mapping[str, str]) -> Path:
    return state_home(environ) / "hostlink" / "mcpb"


def install_bundle(url: str, sha256: str, environ: Mapping[str, str]) -> Path:
    """The directory of the bundle at `url`, downloaded, verified against `sha256` and unpacked
    (or the one installed before with that hash)."""
    if not SHA256.fullmatch(sha256):
        raise RegistryError("the MCPB package has no valid fileSha256, so it cannot be verified; it is refused")
    home = bundles_home(environ)
    target = home / sha256
    if (target / "manifest.json").is_file():
        return target
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".download-", dir=home) as scratch:
        archive = Path(scratch) / "bundle.mcpb"
        digest = anyio.run(_download, url, archive)
        if digest != sha256:
            raise RegistryError("the MCPB bundle's SHA-256 does not match the record's fileSha256; "
                                "it was refused and removed")
        unpacked = Path(scratch) / "unpacked"
        _unpack(archive, unpacked)
        with contextlib.suppress(FileExistsError, OSError):
            os.replace(unpacked, target)  # another add of the same bundle may have won: the same bytes
    if not (target / "manifest.json").is_file():
        raise RegistryError("the MCPB bundle has no manifest.json")
    return target


async def _download(url: str, archive: Path) -> str:
    """Stream `url` into `archive` (0600), answering the SHA-256 of its bytes."""
    import httpx2

    from hostlink.mcp.transports.http import SafeTransport

    digest = hashlib.sha256()
    try:
        with anyio.fail_after(REQUEST_SECONDS * 6):
            async with (httpx2.AsyncClient(transport=SafeTransport(MAX_BUNDLE_BYTES), timeout=REQUEST_SECONDS) as http,
                        http.stream("GET", url) as answer):
                if answer.status_code != 200:
                    raise RegistryError(f"the MCPB bundle's server answered HTTP {answer.status_code}")
                with open_private_file(archive.parent, archive.name) as out:
                    async for chunk in answer.aiter_bytes():
                        digest.update(chunk)
                        out.write(chunk)
    except TimeoutError:
        raise RegistryError("the MCPB bundle did not download in time") from None
    except RegistryError:
        raise
    except McpError as refused:  # the SafeTransport refused the URL or the size: fixed text
        raise RegistryError(f"the MCPB bundle: {refused}") from None
    except httpx2.HTTPError as error:
        raise RegistryError(f"the MCPB bundle could not be downloaded ({type(error).__name__})") from None
    return digest.hexdigest()


def _unpack(archive: Path, directory: Path) -> None:
    try:
        with zipfile.ZipFile(archive) as bundle:
            members = bundle.infolist()
            if len(members) > MAX_MEMBERS or sum(m.file_size for m in members) > MAX_UNPACKED_BYTES:
                raise RegistryError("the MCPB bundle unpacks past its bounds (files or size); it is refused")
            for member in members:
                parts = PurePosixPath(member.filename).parts
                if (not parts or member.filename.startswith("/") or "\\" in member.filename or ".." in parts
                        or ":" in parts[0] or stat.S_ISLNK(member.external_attr >> 16)):
                    raise RegistryError("the MCPB bundle has a member outside its directory or a link; it is refused")
            directory.mkdir(mode=0o700)
            bundle.extractall(directory)
    except zipfile.BadZipFile:
        raise RegistryError("the MCPB bundle is not a zip archive") from None


def bundle_command(directory: Path) -> dict[str, Any]:
    """The stdio entry the bundle's manifest names, with `${__dirname}` filled in."""
    path = directory / "manifest.json"
    if path.stat().st_size > MAX_MANIFEST_BYTES:
        raise RegistryError("the MCPB bundle's manifest.json is larger than 1 MiB")
    try:
        manifest = json.loads(path.read_bytes())
    except (ValueError, RecursionError):
        raise RegistryError("the MCPB bundle's manifest.json is not JSON") from None
    server = manifest.get("server") if isinstance(manifest, dict) else None
    config = server.get("mcp_config") if isinstance(server, dict) else None
    if not isinstance(config, dict):
        raise RegistryError("the MCPB bundle's manifest.json has no server.mcp_config")
    where = str(directory)
    argv = [DIRNAME.sub(lambda _: where, part) for part in
            checked_argv([config.get("command"), *_strings(config.get("args"))], "manifest.json server.mcp_config",
                         allow=DIRNAME)]
    entry: dict[str, Any] = {"command": argv[0], "args": argv[1:]}
    env = config.get("env")
    if env:
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            raise RegistryError("the MCPB bundle's manifest.json has an env that is not strings")
        names = list(env)
        values = checked_argv(list(env.values()), "manifest.json server.mcp_config.env", allow=DIRNAME)
        entry["env"] = {name: DIRNAME.sub(lambda _: where, value) for name, value in zip(names, values, strict=True)}
    return entry


def _strings(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value] if value is not None else []

