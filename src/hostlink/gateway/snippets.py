"""`hostlink mcp serve --show-config PROGRAM`: what adds hostlink to another MCP host.

Printed only: hostlink never writes into another program's files. The command is the
absolute path of the running `hostlink` when it can be told (programs started from a
desktop often lack the shell's PATH), else plain `hostlink`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

PROGRAMS = ("claude-code", "claude-desktop", "cursor", "vscode", "codex", "gemini")


def _entry(command: str, args: Sequence[str]) -> dict[str, object]:
    return {"command": command, "args": list(args)}


def show_config(program: str, command: str, args: Sequence[str]) -> str:
    """The exact text that adds `command args` as the MCP server `hostlink` to `program`."""
    entry = _entry(command, args)
    if program == "claude-code":
        return ("# run once (add --scope user for every project, or --scope project to share it in .mcp.json):\n"
                + " ".join(["claude", "mcp", "add", "hostlink", "--", _shell(command), *map(_shell, args)]))
    if program == "claude-desktop":
        return ("// in claude_desktop_config.json (Settings > Developer > Edit Config), under \"mcpServers\":\n"
                + json.dumps({"mcpServers": {"hostlink": entry}}, indent=2))
    if program == "cursor":
        return ("// in ~/.cursor/mcp.json (every project) or .cursor/mcp.json (this project):\n"
                + json.dumps({"mcpServers": {"hostlink": entry}}, indent=2))
    if program == "vscode":
        return ("// in .vscode/mcp.json (this workspace) or the user mcp.json (MCP: Open User Configuration):\n"
                + json.dumps({"servers": {"hostlink": {"type": "stdio", **entry}}}, indent=2))
    if program == "codex":
        return ("# in ~/.codex/config.toml (or .codex/config.toml of a trusted project):\n"
                f"[mcp_servers.hostlink]\ncommand = {json.dumps(command)}\n"
                f"args = [{', '.join(json.dumps(arg) for arg in args)}]")
    if program == "gemini":
        return ("// in ~/.gemini/settings.json (every project) or .gemini/settings.json (this project):\n"
                + json.dumps({"mcpServers": {"hostlink": entry}}, indent=2))
    raise ValueError(f"unknown program {program!r}")


def _shell(word: str) -> str:
    import shlex

    return shlex.quote(word)
