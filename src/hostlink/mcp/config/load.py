"""MCP server configuration: sources, precedence, project trust and `${VAR}` interpolation.

Sources, in order (a later file replaces a whole server entry of the same name):
`$XDG_CONFIG_HOME/mcp/mcp.json`, `$XDG_CONFIG_HOME/hostlink/mcp.json`, then, only when
the host trusts the project, `<cwd>/.mcp.json` and `<cwd>/.hostlink/mcp.json`. An
untrusted project can neither add nor override a server: its names are only reported.

Each file is `{"mcpServers": {NAME: entry}}` (the format other MCP clients use), with an
optional `"$schema"` for editors (`hostlink mcp schema` prints the JSON Schema) and an optional
`"registry"`, the MCP registry `hostlink mcp search` asks (read from hostlink's user file only). A file
whose structure is broken (unreadable, not JSON, not that shape, a bad server name, too many
servers) fails the whole load with a ConfigError naming the file: dropping it silently would
change which servers exist. A problem inside one entry (a `${VAR}` that is not set, a field
the schema refuses) belongs to that server alone: the name stays taken, by a broken entry
whose reason names the file and the field, and the other servers work. A disabled entry is
never expanded. Messages never contain values (they may be secrets).
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hostlink.host.platform.files import BINARY, CLOEXEC, NONBLOCK
from hostlink.host.trust import PROJECT_FILES, config_home, find_project
from hostlink.mcp.config.rules import ENV_NAME_PATTERN, NAME_PATTERN, SchemaError, safe_key
from hostlink.mcp.errors import ServerDisabled, ServerMisconfigured, ServerNotFound

if TYPE_CHECKING:  # the schema (pydantic) loads with the first entry there is to parse
    from hostlink.mcp.config.schema import ServerConfig

MAX_FILE_BYTES = 1024 * 1024
MAX_SERVERS = 64
VAR_REFERENCE = re.compile(r"\$\{([^}]*)\}")


class ConfigError(Exception):
    """A configuration file is unusable; the message names the file and field, never a value."""

    def __init__(self, source: Path, field: str, problem: str) -> None:
        shown = str(source) if str(source).isprintable() else ascii(str(source))  # no escapes from a path
        super().__init__(f"{shown}: {field}: {problem}" if field else f"{shown}: {problem}")
        self.source = source
        self.field = field


@dataclass(frozen=True)
class LoadedConfig:
    """The merged configuration: servers by name, the file each came from, ignored names, and
    the entries that cannot be used with the reason (file and field, never a value)."""

    servers: dict[str, ServerConfig] = field(default_factory=dict)
    sources: dict[str, Path] = field(default_factory=dict)
    ignored_project_servers: list[str] = field(default_factory=list)
    broken: dict[str, str] = field(default_factory=dict)


def user_config_files(environ: Mapping[str, str]) -> list[Path]:
    """The user's config files in precedence order (XDG_CONFIG_HOME, default ~/.config)."""
    base = config_home(environ)
    return [base / "mcp" / "mcp.json", base / "hostlink" / "mcp.json"]


def project_config_files(cwd: Path) -> list[Path]:
    """The project's config files in precedence order, in the project `cwd` is in (its
    nearest directory up with one of them, at most up to the repository root)."""
    project = find_project(cwd)
    return [project / name for name in PROJECT_FILES]


def load_config(cwd: Path, project_trusted: bool, environ: Mapping[str, str] | None = None) -> LoadedConfig:
    """Read every source in order and merge; raise ConfigError on the first structurally broken
    file; a broken entry is kept in `broken` (a later file's entry replaces it as any other)."""
    environ = os.environ if environ is None else environ
    loaded = LoadedConfig()
    ignored = loaded.ignored_project_servers
    for path in user_config_files(environ):
        _merge(path, read_text(path), environ, loaded)
    for path in project_config_files(Path(cwd)):
        if project_trusted:
            _merge(path, read_text(path), environ, loaded)
        else:
            ignored.extend(n for n in _untrusted_names(path) if n not in ignored)
    return loaded


def _merge(path: Path, text: str | None, environ: Mapping[str, str], loaded: LoadedConfig) -> None:
    if text is None:
        return
    for name, raw in server_entries(load_json(text, path), path).items():
        loaded.servers.pop(name, None)
        loaded.broken.pop(name, None)
        loaded.sources[name] = path
        try:
            loaded.servers[name] = parse_entry(name, raw, path, environ)
        except ConfigError as exc:
            loaded.broken[name] = str(exc)
    if len(loaded.sources) > MAX_SERVERS:
        raise ConfigError(path, "mcpServers", f"more than {MAX_SERVERS} servers in all configuration files")


def parse_document(text: str, source: Path, environ: Mapping[str, str] | None = None) -> dict[str, ServerConfig]:
    """Parse one `{"mcpServers": {...}}` document, interpolating `${VAR}` from environ;
    strict: the first broken entry raises ConfigError."""
    environ = os.environ if environ is None else environ
    entries = server_entries(load_json(text, source), source)
    return {name: parse_entry(name, raw, source, environ) for name, raw in entries.items()}


def read_text(path: Path) -> str | None:
    """The file's text, None when it does not exist. Never blocks on a FIFO or device."""
    try:
        fd = os.open(path, os.O_RDONLY | NONBLOCK | CLOEXEC | BINARY)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(path, "", f"cannot be read ({exc.strerror})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ConfigError(path, "", "is not a regular file")
    with os.fdopen(fd, "rb") as file:
        data = file.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise ConfigError(path, "", "is larger than 1 MiB")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(path, "", f"is not valid UTF-8 (byte offset {exc.start})") from None


def load_json(text: str, source: Path) -> Any:
    if len(text.encode("utf-8", "surrogatepass")) > MAX_FILE_BYTES:
        raise ConfigError(source, "", "is larger than 1 MiB")
    try:
        return json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise ConfigError(source, "", f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except _DuplicateKey as exc:
        raise ConfigError(source, "", f"duplicate key {safe_key(exc.key)} in a JSON object") from None
    except RecursionError:
        raise ConfigError(source, "", "invalid JSON: nested too deeply") from None
    except ValueError:  # NaN/Infinity, or an integer literal beyond Python's digit limit
        raise ConfigError(source, "", "invalid JSON: NaN, Infinity or an oversized number") from None


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """Refuse duplicate keys: which of two entries wins must never be a parser accident."""
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result


def _no_constant(name: str) -> Any:
    raise ValueError(name)


def server_entries(document: Any, source: Path) -> dict[str, Any]:
    if not isinstance(document, dict):
        raise ConfigError(source, "", 'must be a JSON object with an "mcpServers" object')
    extra = [k for k in document if k not in ("mcpServers", "$schema", "registry")]
    if extra:
        raise ConfigError(source, safe_key(extra[0]),
                          'unknown top-level field (only "mcpServers", "$schema" and "registry" are allowed)')
    if not isinstance(document.get("$schema", ""), str):
        raise ConfigError(source, "$schema", "must be a string (the JSON Schema editors check the file against)")
    if not isinstance(document.get("registry", ""), str):
        raise ConfigError(source, "registry", "must be a string (the URL of the MCP registry to search)")
    entries = document.get("mcpServers")
    if not isinstance(entries, dict):
        raise ConfigError(source, "mcpServers", "required, and must be a JSON object")
    if len(entries) > MAX_SERVERS:
        raise ConfigError(source, "mcpServers", f"more than {MAX_SERVERS} servers")
    for name in entries:
        if not NAME_PATTERN.fullmatch(name):
            raise ConfigError(source, f"mcpServers.{safe_key(name)}",
                              "invalid server name (1-64 of A-Z a-z 0-9 _ -)")
    return entries


def parse_entry(name: str, raw: Any, source: Path, environ: Mapping[str, str]) -> ServerConfig:
    from hostlink.mcp.config.schema import parse_server

    prefix = f"mcpServers.{name}"
    if isinstance(raw, dict) and raw.get("disabled") is True:
        return _disabled_entry(raw, source, prefix)
    try:
        server = parse_server(_interpolate_entry(raw, environ))
    except SchemaError as exc:
        raise ConfigError(source, f"{prefix}.{exc.field}" if exc.field else prefix, exc.problem) from None
    if server.transport == "stdio" and raw["command"] != server.command:
        return server.as_written(raw["command"])  # expanded from ${VAR}: messages show the reference
    return server


def _disabled_entry(raw: dict[str, Any], source: Path, prefix: str) -> ServerConfig:
    """A disabled entry is never expanded (its `${VAR}` may well be unset) and never used:
    checked as written, or, where an unexpanded reference is what the schema refuses, kept
    as its transport alone, enough to be listed as disabled."""
    from hostlink.mcp.config.schema import HttpServer, StdioServer, parse_server

    try:
        return parse_server(raw)
    except SchemaError as exc:
        if "${" not in json.dumps(raw):
            raise ConfigError(source, f"{prefix}.{exc.field}" if exc.field else prefix, exc.problem) from None
    if ("command" in raw) == ("url" in raw):
        raise ConfigError(source, prefix, 'exactly one of "command" (stdio) or "url" (Streamable HTTP) is required')
    if "command" in raw:
        return StdioServer.model_construct(command=str(raw["command"]), disabled=True)
    return HttpServer.model_construct(url=str(raw["url"]), disabled=True)


def _interpolate_entry(raw: Any, environ: Mapping[str, str]) -> Any:
    """Expand `${VAR}` where the schema allows it; leave wrong types for the schema to refuse."""
    if not isinstance(raw, dict):
        return raw
    entry = dict(raw)
    for key in ("command", "cwd", "url"):
        if isinstance(entry.get(key), str):
            entry[key] = _expand(entry[key], key, environ)
    if isinstance(entry.get("args"), list):
        # args go verbatim to exec (no shell), so a leading "!" there is ordinary data.
        entry["args"] = [_expand(v, f"args.{i}", environ, bang_ok=True) if isinstance(v, str) else v
                         for i, v in enumerate(entry["args"])]
    for key in ("env", "headers"):
        if isinstance(entry.get(key), dict):
            entry[key] = {k: _expand(v, f"{key}.{safe_key(k)}", environ) if isinstance(v, str) else v
                          for k, v in entry[key].items()}
    return entry


def _expand(value: str, where: str, environ: Mapping[str, str], bang_ok: bool = False) -> str:
    """Replace `${VAR}` and `${VAR:-default}`; a missing variable without default is an error.

    A leading "!" is the shell-evaluated secret syntax of other tools; hostlink never runs it.
    """
    if not bang_ok and value.startswith("!"):
        raise SchemaError(where, 'a value starting with "!" (a shell-evaluated secret) is not supported; '
                                 "use ${VAR} or an env-named credential")

    def replace(match: re.Match[str]) -> str:
        name, sep, default = match.group(1).partition(":-")
        if not ENV_NAME_PATTERN.fullmatch(name):
            raise SchemaError(where, "invalid ${…} reference (expected ${NAME} or ${NAME:-default})")
        if name in environ:
            return environ[name]
        if sep:
            return default
        raise SchemaError(where, f"environment variable {name} is not set")

    expanded = VAR_REFERENCE.sub(replace, value)
    if "${" in VAR_REFERENCE.sub("", value):
        raise SchemaError(where, "unterminated ${ reference")
    return expanded


def _untrusted_names(path: Path) -> list[str]:
    """Server names an untrusted project file declares; a broken file declares none.

    An untrusted project must not be able to break the user's own configuration, so
    nothing here raises.
    """
    try:
        text = read_text(path)
        return [] if text is None else list(server_entries(load_json(text, path), path))
    except ConfigError:
        return []


def enabled_config(servers: Mapping[str, ServerConfig], name: str, source: object = None,
                   broken: Mapping[str, str] | None = None) -> ServerConfig:
    """The configuration of the enabled server `name`: the one check every front end makes.

    ServerNotFound, ServerMisconfigured (its entry in `broken`, with the reason) or
    ServerDisabled (saying where it is disabled: `source`, e.g. the file it came from)
    otherwise.
    """
    config = servers.get(name)
    if config is None and broken and name in broken:
        raise ServerMisconfigured(f"MCP server {name!r} is misconfigured: {broken[name]}")
    if config is None:
        from hostlink.host.output import did_you_mean, one_line

        names = sorted([*servers, *(broken or ())])  # the name may be anyone's: shown cut
        known = ", ".join(names) or "none configured"
        raise ServerNotFound(f"unknown MCP server {one_line(name, 100)!r} (known: {known})"
                             + did_you_mean(name, names))
    if config.disabled:
        raise ServerDisabled(f"MCP server {name!r} is disabled in {source or 'its configuration'}")
    return config
