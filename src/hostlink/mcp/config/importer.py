"""Reading other MCP clients' configurations, for `hostlink mcp import`.

Each program keeps its servers at a documented per-platform location, in a dialect of the
`mcpServers` format: VS Code's `servers` + `inputs`, Windsurf's `serverUrl`, the
Gemini CLI's `httpUrl` (its `url` is SSE), editor variables such as `${env:NAME}`.
What maps onto hostlink's schema is converted; anything else refuses that one entry with
the reason, since a guess would start a different server than the user configured.
Nothing here writes: the command checks and writes through `config_edit`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hostlink.host.output import one_line
from hostlink.host.platform.folders import SYSTEM, app_data, home_folder
from hostlink.mcp.config.load import ConfigError, load_json, read_text
from hostlink.mcp.config.rules import safe_key

PROGRAMS = {"claude-desktop": "Claude Desktop", "claude-code": "Claude Code", "cursor": "Cursor",
            "vscode": "VS Code", "windsurf": "Windsurf", "gemini": "Gemini CLI"}
TAKEN = {"command", "args", "env", "cwd", "url", "headers", "disabled", "includeTools", "excludeTools"}
RENAMED = {"windsurf": {"serverUrl": "url", "disabledTools": "excludeTools"},
           "gemini": {"httpUrl": "url", "timeout": "requestTimeoutMs"}}
DROPPED = {"gemini": {"trust": "trust (skipping confirmations) is not taken: the host decides",
                      "description": "description is not kept"}}
HTTP_TYPES = ("http", "streamable-http")
# the file in a project where the program keeps that project's servers (Claude Code: its project scope)
PROJECT_FILES = {"vscode": ".vscode/mcp.json", "cursor": ".cursor/mcp.json", "gemini": ".gemini/settings.json",
                 "claude-code": ".mcp.json"}
_REFERENCE = re.compile(r"\$\{([^}]*)\}")
_BARE_REFERENCE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")  # Gemini CLI's $VAR


class ImportFailed(Exception):
    """The source cannot be read at all; the message names the file."""


class Missing(ImportFailed):
    """The file is not there."""


class Unsupported(Exception):
    """One entry cannot be taken; the message is the reason (never a value)."""


@dataclass
class Found:
    """What a source holds: converted entries in its order, refused ones with the reason,
    and notes on what a conversion left out."""

    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def source_path(program: str, environ: Mapping[str, str], system: str = SYSTEM) -> Path:
    """The program's user-level MCP configuration file on `system` (where it keeps its
    settings there: `hostlink.host.platform.folders`)."""
    home = home_folder(environ, system)
    if program == "claude-desktop":
        return app_data(environ, system) / "Claude" / "claude_desktop_config.json"
    if program == "claude-code":
        return Path(environ["CLAUDE_CONFIG_DIR"], ".claude.json") if environ.get("CLAUDE_CONFIG_DIR") \
            else home / ".claude.json"
    if program == "vscode":
        return app_data(environ, system) / "Code" / "User" / "mcp.json"
    return home / {"cursor": ".cursor/mcp.json", "windsurf": ".codeium/windsurf/mcp_config.json",
                   "gemini": ".gemini/settings.json"}[program]


def read_source(program: str, path: Path, cwd: Path) -> Found:
    """Read `path` as `program` writes it and convert every server entry."""
    try:
        text = read_text(path)
        if text is None:
            raise Missing(f"{path}: no {PROGRAMS[program]} configuration here")
        document = load_json(strip_comments(text), path)
    except ConfigError as exc:
        raise ImportFailed(str(exc)) from None
    if not isinstance(document, dict):
        raise ImportFailed(f"{path}: not a JSON object")
    key = "servers" if program == "vscode" else "mcpServers"
    servers = _object(document, key, path)
    found = Found()
    if program == "claude-code":  # the local scope of this directory replaces user entries
        project = _object(document, "projects", path).get(str(cwd))
        local = _object(project, key, path) if isinstance(project, dict) else {}
        servers = {**servers, **local}
        found.notes += [f"{safe_key(n)}: from the local scope of {cwd}" for n in local]
    for name, raw in servers.items():
        try:
            entry, notes = convert(program, raw)
        except Unsupported as exc:
            found.refused[name] = str(exc)
            continue
        found.entries[name] = entry
        found.notes += [f"{safe_key(name)}: {note}" for note in notes]
    return found


def read_sources(program: str, user_file: Path, cwd: Path) -> tuple[Found, list[Path]]:
    """The program's user file, then its project file in `cwd` where it has one (its
    entries replace the user file's of the same name), and the files that were there."""
    project = PROJECT_FILES.get(program)
    paths = [user_file, *([cwd / project] if project else [])]
    found, read = Found(), []
    for path in paths:
        try:
            one = read_source(program, path, cwd)
        except Missing:
            continue
        read.append(path)
        for name in [*one.entries, *one.refused]:
            found.entries.pop(name, None)
            found.refused.pop(name, None)
        found.entries.update(one.entries)
        found.refused.update(one.refused)
        found.notes += one.notes
    if not read:
        raise ImportFailed(f"no {PROGRAMS[program]} configuration here ({' nor '.join(map(str, paths))})")
    return found, read


def _object(document: Any, key: str, path: Path) -> dict[str, Any]:
    value = document.get(key, {}) if isinstance(document, dict) else {}
    if not isinstance(value, dict):
        raise ImportFailed(f"{path}: {key} is not a JSON object")
    return value


def convert(program: str, raw: Any) -> tuple[dict[str, Any], list[str]]:
    """One entry in hostlink's schema, and notes on what was left out; Unsupported otherwise."""
    if not isinstance(raw, dict):
        raise Unsupported("the entry is not a JSON object")
    kind = raw.get("type")
    if kind == "sse":
        raise Unsupported('type "sse" (the deprecated HTTP+SSE transport) is not supported')
    if kind is not None and kind not in ("stdio", *HTTP_TYPES):
        raise Unsupported(f"type {safe_key(str(kind))} is not supported")
    if program == "gemini" and "url" in raw and kind not in HTTP_TYPES:
        raise Unsupported("url is the SSE transport in the Gemini CLI, which hostlink does not support "
                          "(a Streamable HTTP server there is httpUrl)")
    entry: dict[str, Any] = {}
    notes: list[str] = []
    for key, value in raw.items():
        if key == "type":
            continue
        if key in DROPPED.get(program, {}):
            notes.append(DROPPED[program][key])
            continue
        target = RENAMED.get(program, {}).get(key, key)
        if target == "requestTimeoutMs" and not (isinstance(value, int) and 100 <= value <= 300000):
            notes.append("timeout is outside 100-300000 ms; hostlink's default is used")
            continue
        if target not in TAKEN and target != "requestTimeoutMs":
            raise Unsupported(f"{safe_key(key)} is not supported by hostlink")
        if target in entry:
            raise Unsupported(f"{safe_key(key)} and {target} are both given")
        entry[target] = _values(program, target, value)
    if (kind == "stdio" and "command" not in entry) or (kind in HTTP_TYPES and "url" not in entry):
        raise Unsupported(f'type "{kind}" does not match the entry')
    return entry, notes


def _values(program: str, key: str, value: Any) -> Any:
    """`value` with the program's variables in hostlink's `${VAR}` form."""
    if key in ("command", "cwd", "url") and isinstance(value, str):
        return _text(program, value, key)
    if key == "args" and isinstance(value, list):
        return [_text(program, v, f"args.{i}") if isinstance(v, str) else v for i, v in enumerate(value)]
    if key in ("env", "headers") and isinstance(value, dict):
        return {k: _text(program, v, f"{key}.{safe_key(k)}") if isinstance(v, str) else v for k, v in value.items()}
    return value


def _text(program: str, value: str, where: str) -> str:
    if program == "gemini":
        value = _BARE_REFERENCE.sub(r"${\1}", value)

    def replace(match: re.Match[str]) -> str:
        inner = match.group(1)
        if inner.startswith("input:"):
            raise Unsupported(f"{where} uses a VS Code input (${{{one_line(inner, 70)}}}), asked for "
                              "interactively, which hostlink cannot take; put the value in an environment "
                              "variable and write ${VAR}")
        if inner.startswith("env:"):
            return "${" + inner[4:] + "}"
        if inner == "userHome":
            return "${HOME}"
        editor = program in ("cursor", "vscode")
        if editor or (":" in inner and ":-" not in inner):
            raise Unsupported(f"{where} uses ${{{one_line(inner, 70)}}}, a {PROGRAMS[program]} variable "
                              "hostlink has no equivalent for")
        return match.group(0)

    return _REFERENCE.sub(replace, value)


def strip_comments(text: str) -> str:
    """JSON with comments (`//`, `/* */`) and trailing commas, as VS Code and the Gemini
    CLI allow, as plain JSON; strings are left alone."""
    out: list[str] = []
    i, n, in_string = 0, len(text), False
    while i < n:
        char = text[i]
        if in_string:
            out.append(text[i:i + 2] if char == "\\" else char)
            in_string = char != '"'
            i += 2 if char == "\\" else 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        else:
            if char in "}]":
                k = len(out) - 1
                while k >= 0 and out[k].isspace():
                    k -= 1
                if k >= 0 and out[k] == ",":
                    del out[k]
            in_string = char == '"'
            out.append(char)
            i += 1
    return "".join(out)
