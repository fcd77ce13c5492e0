"""Writing one MCP configuration file: add or remove server entries, atomically.

A write is all or nothing. The whole resulting document is checked with the loader's own
rules first (structure, names, limits, each new entry against the schema); a refusal
leaves the file byte-identical. The other entries and keys stay as they were, in their
order and in the file's indentation, and the new text replaces the file by rename of a
synced temporary file in the same directory, so a crash leaves either the old or the new
file, never a mix. Literal values that look like secrets are refused unless asked for:
a config file is plain text, a `${VAR}` reference is not.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hostlink.host.platform.files import owned_by_user
from hostlink.host.platform.locks import lock, open_directory_lock, try_lock
from hostlink.host.platform.processes import process_alive
from hostlink.mcp.config.load import (
    MAX_FILE_BYTES,
    MAX_SERVERS,
    ConfigError,
    load_json,
    parse_entry,
    project_config_files,
    read_text,
    server_entries,
    user_config_files,
)
from hostlink.mcp.config.rules import NAME_PATTERN, safe_key

SECRET_NAME = re.compile(r"TOKEN|KEY|SECRET|PASSWORD|AUTHORIZATION", re.IGNORECASE)
# a value that keeps its secret in the environment: an optional auth scheme, then references
REFERENCE_ONLY = re.compile(r"\s*(?:[A-Za-z]+\s+)?(?:\$\{[A-Za-z_][A-Za-z0-9_]*(?::-)?\}[\s:]*)+")
PLACEHOLDER = "1"  # stands in for an unset variable while an entry's shape is checked
HIDDEN = "(a literal secret, not shown)"


class EditRefused(Exception):
    """The edit was refused; the file is unchanged. The message never contains a value."""


def target_file(scope: str, environ: Mapping[str, str], cwd: Path) -> Path:
    """The file a scope writes: hostlink's own user file, or `.mcp.json` in `cwd`."""
    return user_config_files(environ)[1] if scope == "user" else project_config_files(cwd)[0]


@dataclass(frozen=True)
class ConfigFile:
    """One configuration file as read: its text (None when absent) and its document."""

    path: Path
    text: str | None
    document: dict[str, Any]

    @property
    def servers(self) -> dict[str, Any]:
        servers: dict[str, Any] = self.document["mcpServers"]  # server_entries checked it is one
        return servers


def open_file(path: Path) -> ConfigFile:
    """Read `path` for an edit; a file the loader would refuse is refused here too."""
    try:
        text = read_text(path)
        if text is None:
            return ConfigFile(path, None, {"mcpServers": {}})
        document = load_json(text, path)
        server_entries(document, path)
    except ConfigError as exc:
        raise EditRefused(f"{exc}; fix the file by hand first") from None
    return ConfigFile(path, text, document)


class _Assumed(Mapping[str, str]):
    """The environment with a placeholder for every unset variable (noted in `unset`):
    a write checks an entry's shape, while whether its variables are set is a question
    for the session that uses it."""

    def __init__(self, environ: Mapping[str, str], unset: list[str]) -> None:
        self._environ, self._unset = environ, unset

    def __getitem__(self, key: str) -> str:
        if key not in self._environ and key not in self._unset:
            self._unset.append(key)
        return self._environ.get(key, PLACEHOLDER)

    def __contains__(self, key: object) -> bool:
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(self._environ)

    def __len__(self) -> int:
        return len(self._environ)


def check_entry(name: str, raw: Any, path: Path, environ: Mapping[str, str], *, literal: bool = False) -> list[str]:
    """Refuse (EditRefused) an entry the loader would refuse, or one with a literal secret
    unless `literal`; answer warnings (unset variables, fields checked only when used)."""
    if not NAME_PATTERN.fullmatch(name):
        raise EditRefused(f"invalid server name {safe_key(name)} (1-64 of A-Z a-z 0-9 _ -)")
    if not literal:
        problems = secret_problems(raw)
        if problems:
            raise EditRefused(f"mcpServers.{name}.{problems[0]}")
    unset: list[str] = []
    warnings: list[str] = []
    try:
        parse_entry(name, raw, path, _Assumed(environ, unset))
    except ConfigError as exc:
        # a URL that is all or mostly ${…} can only be judged once its variables are known
        if not (exc.field == f"mcpServers.{name}.url" and isinstance(raw, dict)
                and "${" in str(raw.get("url"))):
            raise EditRefused(str(exc)) from None
        warnings.append(f"{name}: url depends on ${{…}} and is checked when the server is used")
    warnings += [f"{name}: the variable {var} is not set here; the server needs it when used" for var in unset]
    return warnings


def secret_problems(raw: Any) -> list[str]:
    """`env.API_KEY: …` for each literal value of a secret-looking env or header name,
    with the `${VAR}` form to write instead."""
    problems = []
    for key in ("env", "headers"):
        values = raw.get(key) if isinstance(raw, dict) else None
        for item, value in (values.items() if isinstance(values, dict) else ()):
            if isinstance(value, str) and SECRET_NAME.search(item) and not REFERENCE_ONLY.fullmatch(value):
                problems.append(f"{key}.{safe_key(item)}: {_secret_advice(key, item)}")
    return problems


def _secret_advice(key: str, item: str) -> str:
    var = re.sub(r"[^A-Za-z0-9_]", "_", item).upper()
    if key == "env":
        form = f'"{item}": "${{{item}}}"' if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", item) else f'"${{{var}}}"'
        export = item if form.startswith(f'"{item}": ') else var
    elif item.lower() == "authorization":
        form, export = '"Authorization": "Bearer ${MY_TOKEN}"', "MY_TOKEN"
        return (f"a literal value that looks like a secret is refused (config files are plain text); "
                f"write {form} and export {export}, or use --auth bearer --bearer-env {export}; "
                "--literal stores it as given")
    else:
        form, export = f'"{item}": "${{{var}}}"', var
    return (f"a literal value that looks like a secret is refused (config files are plain text); "
            f"write {form} and export {export}, or pass --literal to store it as given")


def hide_secrets(raw: Any) -> Any:
    """The entry to show a person: literal secret-looking env and header values hidden,
    `${VAR}` references shown as written (never expanded)."""
    if not isinstance(raw, dict):
        return raw
    shown = dict(raw)
    for key in ("env", "headers"):
        if isinstance(shown.get(key), dict):
            shown[key] = {item: HIDDEN if isinstance(value, str) and SECRET_NAME.search(item)
                          and not REFERENCE_ONLY.fullmatch(value) else value
                          for item, value in shown[key].items()}
    return shown


def with_entries(file: ConfigFile, entries: Mapping[str, Any]) -> dict[str, Any]:
    """The document with `entries` added at the end of `mcpServers` (or replaced in place)."""
    document = dict(file.document)
    document["mcpServers"] = {**file.servers, **entries}
    return document


def without_entry(file: ConfigFile, name: str) -> dict[str, Any]:
    if name not in file.servers:
        raise EditRefused(f"{file.path}: no server named {safe_key(name)} in this file")
    document = dict(file.document)
    document["mcpServers"] = {key: value for key, value in file.servers.items() if key != name}
    return document


def check_count(path: Path, document: Mapping[str, Any], environ: Mapping[str, str], cwd: Path) -> None:
    """A load refuses more than MAX_SERVERS servers over all files, so a write does too
    (counting the project's files, which a trusted load reads)."""
    names = set(document["mcpServers"])
    for other in [*user_config_files(environ), *project_config_files(cwd)]:
        if other.absolute() != path.absolute():
            with contextlib.suppress(ConfigError):
                text = read_text(other)
                names.update(server_entries(load_json(text, other), other) if text is not None else ())
    if len(names) > MAX_SERVERS:
        raise EditRefused(f"{path}: more than {MAX_SERVERS} servers in all configuration files")


def render(document: Mapping[str, Any], like: str | None) -> str:
    """The document as JSON in the style of `like` (indentation, final newline, escapes),
    so that a removal after an addition gives back the same bytes."""
    if like is None:
        return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    found = re.search(r"\n([ \t]+)\S", like)
    indent = found.group(1) if found else None
    separators = None if indent is not None or '": ' in like else (",", ":")
    ascii_only = like.isascii() and "\\u" in like
    text = json.dumps(document, indent=indent, separators=separators, ensure_ascii=ascii_only)
    return text + "\n" if like.endswith("\n") else text


def save(file: ConfigFile, document: Mapping[str, Any]) -> bool:
    """Check the document's structure as a load does and replace the file atomically;
    False when nothing changed (the file is not touched then)."""
    text = render(document, file.text)
    if len(text.encode()) > MAX_FILE_BYTES:
        raise EditRefused(f"{file.path}: the result would be larger than 1 MiB")
    try:
        server_entries(load_json(text, file.path), file.path)
    except ConfigError as exc:
        raise EditRefused(str(exc)) from None
    if text == file.text:
        return False
    replace_file(file.path, text)
    return True


def lock_for_edit(path: Path, waiting: Callable[[], None]) -> Callable[[], None]:
    """Hold an exclusive lock on the directory of the file `path` names from before it is
    read until the edit is done (the returned release), so two edits at once cannot lose
    each other's entries; `waiting` runs first when another edit holds it. A directory
    lock leaves no lock file behind (on Windows: see `hostlink.host.platform.locks`)."""
    directory = Path(os.path.realpath(path)).parent
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = open_directory_lock(directory)
    try:
        if not try_lock(fd):
            waiting()
            lock(fd)
    except BaseException:
        os.close(fd)
        raise
    return lambda: os.close(fd)


TEMP_PATTERN = re.compile(r"\.(?P<name>.+)\.(?P<pid>\d+)\.[^.]+\.tmp")


def replace_file(path: Path, text: str) -> None:
    """Write `text` to a temporary file beside `path` (0600 for a new file, else the
    file's mode), fsync it, rename it over `path` and fsync the directory. A symlinked
    config is written where the link points, so the link stays."""
    real = Path(os.path.realpath(path))
    real.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(os.stat(real).st_mode)
    except FileNotFoundError:
        mode = 0o600
    _sweep(real)
    fd, temp = tempfile.mkstemp(prefix=f".{real.name}.{os.getpid()}.", suffix=".tmp", dir=real.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            os.chmod(temp, mode)
            out.write(text.encode())
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, real)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    if hasattr(os, "O_DIRECTORY"):
        directory = os.open(real.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)


def _sweep(real: Path) -> None:
    """Remove this user's temporary files of `real` left by a writer that died mid-write."""
    for entry in real.parent.iterdir():
        match = TEMP_PATTERN.fullmatch(entry.name)
        if match is None or match["name"] != real.name or process_alive(int(match["pid"])):
            continue
        with contextlib.suppress(OSError):
            if owned_by_user(entry.lstat()):
                entry.unlink()
