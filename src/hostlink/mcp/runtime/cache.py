"""The opt-in tool metadata cache (`"cacheTools": true`): a search without a server start.

The seed keeps no persistent metadata, and without `cacheTools` hostlink writes none. With
it, each complete `tools/list` of the server (what the model may see, names, descriptions
and schemas, sanitized and bounded) is kept in one private file (0700 directory, 0600 file)
under `$XDG_CACHE_HOME/hostlink/mcp-tools`, stamped with the fingerprint of the server's
configuration and the time. An entry whose fingerprint differs (the configuration changed)
or that is older than the TTL is removed when read; `drop` removes it on a list change,
a reconnect or a sign-out. Only searches read it: a call always lists live. Failing to
read or write the cache is never an error: the server is asked instead.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hostlink.host.output import compact_json, strip_controls
from hostlink.host.platform.folders import cache_home
from hostlink.host.private import PrivateStateError, ensure_private_dir, read_private_json, replace_private_file

if TYPE_CHECKING:
    from hostlink.mcp.config.schema import ServerConfig

TTL_SECONDS = 24 * 3600
MAX_FILE_BYTES = 2 * 1024 * 1024  # one server's entry; a larger listing is not cached
MAX_FILES = 256  # entries in all; the oldest go first
NAME_CHARS = 128
DESCRIPTION_CHARS = 2000
FORMAT = 1


@dataclass(frozen=True)
class CachedTool:
    """A tool as the cache keeps it: the fields a search and a listing show."""

    name: str
    title: str | None
    description: str | None
    input_schema: Any
    meta: None = None  # what tool_visibility.model_visible reads: only model-visible tools are kept
    execution: None = None


def cache_directory(environ: Mapping[str, str]) -> Path:
    """`$XDG_CACHE_HOME/hostlink/mcp-tools` (a relative XDG_CACHE_HOME is ignored: ~/.cache;
    `%LOCALAPPDATA%` on Windows)."""
    return cache_home(environ) / "hostlink" / "mcp-tools"


def fingerprint(name: str, config: ServerConfig) -> str:
    """A digest of the server's name and whole configuration, as loaded."""
    shape = {"name": name, "transport": config.transport, "config": config.model_dump(mode="json", by_alias=True)}
    return hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()


class ToolCache:
    """The cache in `directory`; `clock` and `ttl` are for tests."""

    def __init__(self, directory: Path, *, ttl: float = TTL_SECONDS, clock: Callable[[], float] = time.time) -> None:
        self.directory = directory
        self._ttl, self._clock = ttl, clock

    def _path(self, name: str) -> Path:
        return self.directory / f"{hashlib.sha256(name.encode()).hexdigest()[:32]}.json"

    def load(self, name: str, config: ServerConfig) -> tuple[CachedTool, ...] | None:
        """The cached listing, or None (and the entry removed) when there is none that is
        current: same configuration, younger than the TTL, well formed."""
        path = self._path(name)
        entry = read_private_json(path, MAX_FILE_BYTES)
        if entry is None:
            return None
        now = self._clock()
        tools = _tools_of(entry, fingerprint(name, config), now - self._ttl, now)
        if tools is None:
            self.drop(name)
        return tools

    def store(self, name: str, config: ServerConfig, tools: Sequence[Any]) -> None:
        """Keep the model-visible part of a complete listing; too large, it is not kept."""
        from hostlink.mcp.runtime.visibility import model_visible

        kept = [_entry(tool) for tool in tools if model_visible(tool) and _clean_name(tool.name)]
        data = compact_json({"format": FORMAT, "fingerprint": fingerprint(name, config), "stored": self._clock(),
                             "tools": kept})
        try:
            if len(data.encode()) > MAX_FILE_BYTES:
                self.drop(name)
                return
            ensure_private_dir(self.directory.parent)
            ensure_private_dir(self.directory)
            replace_private_file(self.directory, self._path(name).name, data)
            self._evict()
        except (OSError, PrivateStateError):
            return

    def drop(self, name: str) -> None:
        try:
            os.unlink(self._path(name))
        except OSError:
            pass

    def _evict(self) -> None:
        """Keep at most MAX_FILES entries, removing the least recently written."""
        entries = [entry for entry in os.scandir(self.directory) if entry.name.endswith(".json")]
        if len(entries) <= MAX_FILES:
            return
        entries.sort(key=lambda entry: entry.stat(follow_symlinks=False).st_mtime)
        for entry in entries[: len(entries) - MAX_FILES]:
            os.unlink(entry.path)


def _clean_name(name: Any) -> bool:
    """A name the cache can give back exactly: plain text (a call uses it as it is)."""
    return isinstance(name, str) and 0 < len(name) <= NAME_CHARS and strip_controls(name) == name


def _entry(tool: Any) -> dict[str, Any]:
    description = strip_controls(tool.description or "")[:DESCRIPTION_CHARS] or None
    title = strip_controls(tool.title)[:NAME_CHARS] if getattr(tool, "title", None) else None
    return {"name": tool.name, "title": title, "description": description, "inputSchema": tool.input_schema}


def _tools_of(entry: Any, expected: str, oldest: float, now: float) -> tuple[CachedTool, ...] | None:
    """The entry's tools when it is well formed, of this configuration, and stored between
    `oldest` and `now` (a time ahead of the clock would never expire)."""
    if not isinstance(entry, dict) or entry.get("format") != FORMAT or entry.get("fingerprint") != expected:
        return None
    stored, tools = entry.get("stored"), entry.get("tools")
    if not isinstance(stored, (int, float)) or isinstance(stored, bool) or not oldest <= stored <= now \
            or not isinstance(tools, list):
        return None
    found = []
    for item in tools:
        if not (isinstance(item, dict) and _clean_name(item.get("name")) and isinstance(item.get("inputSchema"), dict)
                and all(isinstance(item.get(key), (str, type(None))) for key in ("title", "description"))):
            return None
        found.append(CachedTool(item["name"], item["title"], item["description"], item["inputSchema"]))
    return tuple(found)
