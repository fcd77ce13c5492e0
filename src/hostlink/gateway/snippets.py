"""`hostlink mcp serve --show-config PROGRAM`: what adds hostlink to another MCP host.

Printed only: hostlink never writes into another program's files. The command is the
absolute path of the running `hostlink` when it can be told (programs started from a
desktop often lack the shell's PATH), else plain `hostlink`. A program whose user file lives
in a per-system folder (Claude Desktop, VS Code) gets that file's path on this system, and
the `claude mcp add` line is quoted for this system's shell.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence

from hostlink.host.platform.folders import SYSTEM, app_data
from hostlink.host.platform.shell import word

PROGRAMS = ("claude-code", "claude-desktop", "cursor", "vscode", "codex", "gemini")


def _entry(command: str, args: Sequence[str]) -> dict[str, object]:
    return {"command": command, "args": list(args)}


def show_config(program: str, command: str, args: Sequence[str], environ: Mapping[str, str] | None = None,
                system: str = SYSTEM) -> str:
    """The exact text that adds `command args` as the MCP server `hostlink` to `program`
    (`environ` and `system` locate the per-system files: this process's by default)."""
    entry = _entry(command, args)
    settings = app_data(os.environ if environ is None else environ, system)
    if program == "claude-code":
        return ("# run once (add --scope user for every project, or --scope project to share it in .mcp.json):\n"
                + " ".join(["claude", "mcp", "add", "hostlink", "--", word(command), *map(word, args)]))
    if program == "claude-desktop":
        where = settings / "Claude" / "claude_desktop_config.json"
        return (f"// in {where} (Settings > Developer > Edit Config), under \"mcpServers\":\n"
                + json.dumps({"mcpServers": {"hostlink": entry}}, indent=2))
    if program == "cursor":
        return ("// in ~/.cursor/mcp.json (every project) or .cursor/mcp.json (this project):\n"
                + json.dumps({"mcpServers": {"hostlink": entry}}, indent=2))
    if program == "vscode":
        where = settings / "Code" / "User" / "mcp.json"
        return (f"// in .vscode/mcp.json (this workspace) or {where} (MCP: Open User Configuration):\n"
                + json.dumps({"servers": {"hostlink": {"type": "stdio", **entry}}}, indent=2))
    if program == "codex":
        return ("# in ~/.codex/config.toml (or .codex/config.toml of a trusted project):\n"
                f"[mcp_servers.hostlink]\ncommand = {json.dumps(command)}\n"
                f"args = [{', '.join(json.dumps(arg) for arg in args)}]")
    if program == "gemini":
        return ("// in ~/.gemini/settings.json (every project) or .gemini/settings.json (this project):\n"
                + json.dumps({"mcpServers": {"hostlink": entry}}, indent=2))
    raise ValueError(f"unknown program {program!r}")
