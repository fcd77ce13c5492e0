"""`hostlink mcp import --from PROGRAM`: sample configurations of each program, written at
its documented location in a temporary HOME from its documented format; what hostlink can
take is converted (and loads), the rest is reported with the reason, and nothing is written
without `--yes` or a yes on a terminal. What the command decides runs in this process
(hostlink_here); the terminal's answer is read by a real process on a pseudo-terminal."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hostlink.cli.mcp.importer import SOURCES
from hostlink.mcp.config.importer import PROGRAMS, Unsupported, convert, source_path, strip_comments
from mcp_config_support import environment, hostlink_here, user_file

PROJECT = "project"  # the working directory the command runs in, under tmp_path


def place(tmp_path: Path, relative: str, text: str) -> Path:
    path = tmp_path / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def imported(tmp_path: Path, program: str, *extra: str, env: dict[str, str] | None = None) -> tuple[dict, str]:
    result = hostlink_here(tmp_path, "mcp", "import", "--from", program, "--yes", *extra, env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(user_file(tmp_path).read_text())["mcpServers"], result.stdout


def loads_cleanly(tmp_path: Path, **variables: str) -> dict:
    status = hostlink_here(tmp_path, "mcp", "status", "--json", env=environment(tmp_path, **variables))
    assert status.returncode == 0, status.stderr
    return {entry["name"]: entry["error"] for entry in json.loads(status.stdout)}


def test_claude_desktop(tmp_path):
    place(tmp_path, "config/Claude/claude_desktop_config.json", json.dumps({
        "globalShortcut": "Ctrl+Space",
        "mcpServers": {
            "filesystem": {"command": "npx",
                           "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/u/Desktop"]},
            "brave-search": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-brave-search"],
                             "env": {"BRAVE_API_KEY": "BSA-literal-key"}}}}))
    servers, shown = imported(tmp_path, "claude-desktop")
    assert servers == {"filesystem": {"command": "npx",
                                      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/u/Desktop"]}}
    assert "! brave-search: not imported: mcpServers.brave-search.env.BRAVE_API_KEY: a literal value" in shown
    assert '"BRAVE_API_KEY": "${BRAVE_API_KEY}"' in shown and "BSA-literal-key" not in shown

    servers, shown = imported(tmp_path, "claude-desktop", "--literal")
    assert servers["brave-search"]["env"] == {"BRAVE_API_KEY": "BSA-literal-key"}
    assert "= filesystem: already configured the same" in shown
    assert loads_cleanly(tmp_path) == {"filesystem": None, "brave-search": None}


def test_claude_code_user_and_local_scope(tmp_path):
    cwd = str(tmp_path / PROJECT)
    place(tmp_path, "home/.claude.json", json.dumps({
        "numStartups": 12,
        "mcpServers": {
            "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/",
                       "headers": {"Authorization": "Bearer ${GITHUB_PAT}"}},
            "legacy": {"type": "sse", "url": "https://sse.example.com/sse"},
            "tool": {"type": "stdio", "command": "python", "args": ["tool.py"], "env": {}},
            "helper": {"type": "http", "url": "https://h.example.com/mcp", "headersHelper": "get-headers.sh"}},
        "projects": {
            cwd: {"allowedTools": [], "mcpServers": {
                "db": {"type": "stdio", "command": "db-mcp", "args": ["--dsn", "${DB_DSN:-sqlite:///x.db}"]},
                "tool": {"type": "stdio", "command": "python", "args": ["local-tool.py"]}}},
            "/elsewhere": {"mcpServers": {"other": {"command": "other"}}}}}))
    servers, shown = imported(tmp_path, "claude-code")
    assert servers == {
        "github": {"url": "https://api.githubcopilot.com/mcp/", "headers": {"Authorization": "Bearer ${GITHUB_PAT}"}},
        "tool": {"command": "python", "args": ["local-tool.py"]},  # the local scope wins, as in Claude Code
        "db": {"command": "db-mcp", "args": ["--dsn", "${DB_DSN:-sqlite:///x.db}"]}}
    assert '! legacy: not imported: type "sse" (the deprecated HTTP+SSE transport) is not supported' in shown
    assert "! helper: not imported: headersHelper is not supported by hostlink" in shown
    assert "other" not in shown
    assert loads_cleanly(tmp_path, GITHUB_PAT="x") == {"github": None, "tool": None, "db": None}


def test_cursor(tmp_path):
    place(tmp_path, "home/.cursor/mcp.json", json.dumps({"mcpServers": {
        "fs": {"command": "npx", "args": ["-y", "@x/fs", "${userHome}/src"], "env": {"API_KEY": "${env:API_KEY}"}},
        "ws": {"command": "x", "args": ["${workspaceFolder}"]},
        "remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${env:MCP_TOKEN}"}},
        "dotenv": {"command": "x", "envFile": ".env"}}}))
    servers, shown = imported(tmp_path, "cursor")
    assert servers == {"fs": {"command": "npx", "args": ["-y", "@x/fs", "${HOME}/src"],
                              "env": {"API_KEY": "${API_KEY}"}},
                       "remote": {"url": "https://mcp.example.com/mcp",
                                  "headers": {"Authorization": "Bearer ${MCP_TOKEN}"}}}
    assert "! ws: not imported: args.0 uses ${workspaceFolder}, a Cursor variable hostlink has no equivalent" in shown
    assert "! dotenv: not imported: envFile is not supported by hostlink" in shown
    assert loads_cleanly(tmp_path, API_KEY="k", MCP_TOKEN="t") == {"fs": None, "remote": None}


VSCODE = """{
  // the user's MCP servers (VS Code: JSON with comments and trailing commas)
  "inputs": [
    {"type": "promptString", "id": "perplexity-key", "description": "Perplexity API Key", "password": true},
  ],
  "servers": {
    "perplexity": {
      "type": "stdio", "command": "npx", "args": ["-y", "server-perplexity-ask"],
      "env": {"PERPLEXITY_API_KEY": "${input:perplexity-key}"}
    },
    /* a plain one */
    "fetch": {"type": "stdio", "command": "uvx", "args": ["mcp-server-fetch", "--note=a // not a comment"]},
    "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/",
               "headers": {"Authorization": "Bearer ${env:GH_TOKEN}"}},
    "dotenv": {"type": "stdio", "command": "x", "envFile": "${workspaceFolder}/.env"},
    "events": {"type": "sse", "url": "https://sse.example.com/sse"},
  },
}
"""


def test_vscode_servers_and_inputs(tmp_path):
    place(tmp_path, "config/Code/User/mcp.json", VSCODE)
    servers, shown = imported(tmp_path, "vscode")
    assert servers == {"fetch": {"command": "uvx", "args": ["mcp-server-fetch", "--note=a // not a comment"]},
                       "github": {"url": "https://api.githubcopilot.com/mcp/",
                                  "headers": {"Authorization": "Bearer ${GH_TOKEN}"}}}
    assert ("! perplexity: not imported: env.PERPLEXITY_API_KEY uses a VS Code input (${input:perplexity-key})"
            in shown)
    assert "! dotenv: not imported: envFile is not supported" in shown
    assert '! events: not imported: type "sse"' in shown
    assert loads_cleanly(tmp_path, GH_TOKEN="t") == {"fetch": None, "github": None}


def test_windsurf(tmp_path):
    place(tmp_path, "home/.codeium/windsurf/mcp_config.json", json.dumps({"mcpServers": {
        "remote": {"serverUrl": "https://mcp.example.com/mcp", "headers": {"X-Api-Key": "${env:EXAMPLE_KEY}"}},
        "git": {"command": "uvx", "args": ["mcp-server-git"], "disabledTools": ["git_reset"], "disabled": False},
        "secret-file": {"command": "x", "env": {"TOKEN": "${file:/run/secrets/token}"}}}}))
    servers, shown = imported(tmp_path, "windsurf")
    assert servers == {"remote": {"url": "https://mcp.example.com/mcp", "headers": {"X-Api-Key": "${EXAMPLE_KEY}"}},
                       "git": {"command": "uvx", "args": ["mcp-server-git"], "excludeTools": ["git_reset"],
                               "disabled": False}}
    assert "! secret-file: not imported: env.TOKEN uses ${file:/run/secrets/token}" in shown
    assert loads_cleanly(tmp_path, EXAMPLE_KEY="k") == {"remote": None, "git": None}


def test_gemini(tmp_path):
    place(tmp_path, "home/.gemini/settings.json", json.dumps({"theme": "Dracula", "mcpServers": {
        "remote": {"httpUrl": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer $MY_TOKEN"},
                   "timeout": 30000},
        "py": {"command": "python", "args": ["-m", "srv"], "cwd": "./server", "env": {"API_KEY": "$MY_API_TOKEN"},
               "timeout": 5, "trust": True, "includeTools": ["safe_*"], "excludeTools": ["safe_drop"]},
        "events": {"url": "https://sse.example.com/sse"}}}))
    servers, shown = imported(tmp_path, "gemini")
    assert servers == {
        "remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${MY_TOKEN}"},
                   "requestTimeoutMs": 30000},
        "py": {"command": "python", "args": ["-m", "srv"], "cwd": "./server", "env": {"API_KEY": "${MY_API_TOKEN}"},
               "includeTools": ["safe_*"], "excludeTools": ["safe_drop"]}}
    assert "! events: not imported: url is the SSE transport in the Gemini CLI" in shown
    result = hostlink_here(tmp_path, "mcp", "import", "--from", "gemini", "--dry-run")
    assert "py: trust (skipping confirmations) is not taken" in result.stderr
    assert "py: timeout is outside 100-300000 ms" in result.stderr
    assert loads_cleanly(tmp_path, MY_TOKEN="t", MY_API_TOKEN="k") == {"remote": None, "py": None}


def test_nothing_is_written_without_yes_or_with_dry_run_and_conflicts_are_reported(tmp_path):
    place(tmp_path, "home/.cursor/mcp.json", json.dumps({"mcpServers": {"fs": {"command": "npx"},
                                                                        "new": {"command": "new"}}}))
    target = user_file(tmp_path)
    target.parent.mkdir(parents=True)
    target.write_text('{"mcpServers": {"fs": {"command": "mine"}}}')
    before = target.read_bytes()
    for argv in (["--dry-run"], []):
        result = hostlink_here(tmp_path, "mcp", "import", "--from", "cursor", *argv)
        assert "+ new: stdio: new (0 args)" in result.stdout
        assert "! fs: not imported: 'fs' is already configured differently" in result.stdout
        assert target.read_bytes() == before
    dry = hostlink_here(tmp_path, "mcp", "import", "--from", "cursor", "--dry-run")
    assert "dry run: nothing written" in dry.stdout
    unconfirmed = hostlink_here(tmp_path, "mcp", "import", "--from", "cursor")
    assert unconfirmed.returncode == 2 and "confirm with --yes" in unconfirmed.stderr

    missing = hostlink_here(tmp_path, "mcp", "import", "--from", "windsurf", "--yes")
    assert missing.returncode == 2 and "no Windsurf configuration here" in missing.stderr
    broken = place(tmp_path, "elsewhere.json", '{"mcpServers": ')
    bad = hostlink_here(tmp_path, "mcp", "import", "--from", "cursor", "--file", str(broken), "--yes")
    assert bad.returncode == 2 and f"{broken}: invalid JSON" in bad.stderr
    assert target.read_bytes() == before


def test_a_dry_run_creates_nothing(tmp_path):
    place(tmp_path, "home/.cursor/mcp.json", json.dumps({"mcpServers": {"new": {"command": "new"}}}))
    result = hostlink_here(tmp_path, "mcp", "import", "--from", "cursor", "--dry-run")
    assert result.returncode == 0 and "dry run: nothing written" in result.stdout, result.stderr
    assert not user_file(tmp_path).parent.exists()  # not even the directory the edit lock would make


@pytest.mark.parametrize(("reply", "written"), [(b"y\n", True), (b"n\n", False)])
def test_the_answer_on_the_terminal_decides_whether_it_writes(tmp_path, reply, written):
    place(tmp_path, "home/.cursor/mcp.json", json.dumps({"mcpServers": {"a": {"command": "a"}}}))
    (tmp_path / PROJECT).mkdir(exist_ok=True)
    primary, secondary = os.openpty()
    code = "import sys\nfrom hostlink.cli import main\nsys.argv[0] = 'hostlink'\nmain()"
    process = subprocess.Popen([sys.executable, "-c", code, "mcp", "import", "--from", "cursor"],
                               stdin=secondary, stdout=secondary, stderr=secondary,
                               env=environment(tmp_path), cwd=tmp_path / PROJECT)
    os.close(secondary)
    seen, deadline = b"", time.monotonic() + 60
    while b"[y/N]" not in seen and time.monotonic() < deadline:
        if select.select([primary], [], [], 1)[0]:
            seen += os.read(primary, 4096)
    assert b"write 1 server to" in seen
    os.write(primary, reply)
    assert process.wait(timeout=60) == 0
    while select.select([primary], [], [], 0)[0]:
        try:
            chunk = os.read(primary, 4096)
        except OSError:  # the terminal's other end is closed: all read
            break
        if not chunk:
            break
        seen += chunk
    os.close(primary)
    if written:
        assert json.loads(user_file(tmp_path).read_text())["mcpServers"] == {"a": {"command": "a"}}
    else:
        assert b"nothing written" in seen.split(b"[y/N]")[1] and not user_file(tmp_path).exists()


def test_the_command_offers_every_program_and_loads_cheaply():
    assert tuple(PROGRAMS) == SOURCES
    loaded = subprocess.run([sys.executable, "-c", "import sys, hostlink.cli.mcp; print('pydantic' in sys.modules)"],
                            capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "False"  # `hostlink mcp --help` pays for click alone


def test_documented_locations_per_platform():
    env = {"HOME": "/home/u", "XDG_CONFIG_HOME": "/xdg"}
    assert source_path("claude-desktop", env, "linux") == Path("/xdg/Claude/claude_desktop_config.json")
    assert source_path("claude-desktop", {"HOME": "/Users/u"}, "darwin") == Path(
        "/Users/u/Library/Application Support/Claude/claude_desktop_config.json")
    assert source_path("claude-desktop", {"USERPROFILE": "C:/Users/u", "APPDATA": "C:/Users/u/AppData/Roaming"},
                       "win32") == Path("C:/Users/u/AppData/Roaming/Claude/claude_desktop_config.json")
    assert source_path("vscode", {"HOME": "/Users/u"}, "darwin") == Path(
        "/Users/u/Library/Application Support/Code/User/mcp.json")
    assert source_path("vscode", {"HOME": "/home/u"}, "linux") == Path("/home/u/.config/Code/User/mcp.json")
    assert source_path("claude-code", env, "linux") == Path("/home/u/.claude.json")
    assert source_path("claude-code", {**env, "CLAUDE_CONFIG_DIR": "/cc"}, "linux") == Path("/cc/.claude.json")
    assert source_path("cursor", env, "darwin") == Path("/home/u/.cursor/mcp.json")
    assert source_path("windsurf", env, "linux") == Path("/home/u/.codeium/windsurf/mcp_config.json")
    assert source_path("gemini", env, "linux") == Path("/home/u/.gemini/settings.json")


@pytest.mark.parametrize(("text", "plain"), [
    ('{"a": 1, // c\n "b": [1, 2,],}', '{"a": 1, \n "b": [1, 2]}'),
    ('{"a": "x // y", "b": "/* z */", "c": "q\\" // r"}', '{"a": "x // y", "b": "/* z */", "c": "q\\" // r"}'),
    ('/* lead */{"a": [ , ]}', '{"a": [  ]}'),
])
def test_comments_and_trailing_commas(text, plain):
    assert strip_comments(text) == plain


def test_convert_never_guesses():
    assert convert("claude-code", {"type": "streamable-http", "url": "https://a.example"}) == (
        {"url": "https://a.example"}, [])
    for program, raw in [("cursor", {"type": "stdio", "url": "https://a.example"}),
                         ("gemini", {"httpUrl": "https://a.example", "url": "https://b.example", "type": "http"}),
                         ("vscode", {"type": "websocket", "url": "wss://a.example"}),
                         ("claude-desktop", ["not", "an", "object"])]:
        with pytest.raises(Unsupported):
            convert(program, raw)
