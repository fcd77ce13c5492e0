"""Where a person's config, cache and state live on each system.

Linux and macOS: the XDG folders (`$XDG_CONFIG_HOME` or ~/.config, `$XDG_CACHE_HOME` or
~/.cache, `$XDG_STATE_HOME` or ~/.local/state; a relative value is ignored, as the XDG spec
says). Windows: `%APPDATA%` (roaming) for config, `%LOCALAPPDATA%` for cache and state,
each falling back to its usual place under the profile.

Other programs keep their settings where their system's users expect them: `app_data` is that
folder (the XDG config folder on Linux, ~/Library/Application Support on macOS, `%APPDATA%` on
Windows), so `hostlink mcp import --from` and `--show-config` name each program's file on each
system; they take the system as an argument, so tests on one system drive the others.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

_XDG = {"config": ("XDG_CONFIG_HOME", ".config"), "cache": ("XDG_CACHE_HOME", ".cache"),
        "state": ("XDG_STATE_HOME", ".local/state")}
_WINDOWS = {"config": ("APPDATA", "AppData/Roaming"), "cache": ("LOCALAPPDATA", "AppData/Local"),
            "state": ("LOCALAPPDATA", "AppData/Local")}


SYSTEM = sys.platform  # whose folders other programs use (`mcp import --from` reads them)


def home_folder(environ: Mapping[str, str], system: str = SYSTEM) -> Path:
    """The user's home: `$HOME`, `%USERPROFILE%` on Windows, else what Python finds."""
    return Path(environ.get("USERPROFILE" if system == "win32" else "HOME") or Path.home())


def app_data(environ: Mapping[str, str], system: str = SYSTEM) -> Path:
    """Where desktop programs keep per-user settings on `system` (a `sys.platform` value):
    `%APPDATA%` on Windows, ~/Library/Application Support on macOS, the XDG config folder
    elsewhere (an absolute `$XDG_CONFIG_HOME`, else ~/.config)."""
    home = home_folder(environ, system)
    if system == "win32":
        return Path(environ.get("APPDATA") or home / "AppData" / "Roaming")
    if system == "darwin":
        return home / "Library" / "Application Support"
    config = environ.get("XDG_CONFIG_HOME", "")
    return Path(config) if config.startswith("/") else home / ".config"


def _base(kind: str, environ: Mapping[str, str], home: Path | None) -> Path:
    variable, default = (_WINDOWS if sys.platform == "win32" else _XDG)[kind]
    value = environ.get(variable, "")
    if value and Path(value).is_absolute():
        return Path(value)
    return (home if home is not None else home_folder(environ)) / default


def config_home(environ: Mapping[str, str], home: Path | None = None) -> Path:
    """The base of per-user config (`~/.config`, `%APPDATA%`)."""
    return _base("config", environ, home)


def cache_home(environ: Mapping[str, str], home: Path | None = None) -> Path:
    """The base of per-user caches (`~/.cache`, `%LOCALAPPDATA%`)."""
    return _base("cache", environ, home)


def state_home(environ: Mapping[str, str], home: Path | None = None) -> Path:
    """The base of per-user state (`~/.local/state`, `%LOCALAPPDATA%`)."""
    return _base("state", environ, home)


def temp_variables() -> tuple[str, ...]:
    """The environment variables that place a child's temporary files: `TMPDIR`; on Windows
    also `TEMP` and `TMP`, which Windows programs read (without them they use the system's
    shared temp folder)."""
    return ("TMPDIR", "TEMP", "TMP") if sys.platform == "win32" else ("TMPDIR",)


def cache_variables() -> tuple[str, ...]:
    """The environment variable that places a child's per-user caches: `XDG_CACHE_HOME`;
    `LOCALAPPDATA` on Windows."""
    return ("LOCALAPPDATA",) if sys.platform == "win32" else ("XDG_CACHE_HOME",)
