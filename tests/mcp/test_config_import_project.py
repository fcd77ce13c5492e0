"""`hostlink mcp import --from PROGRAM` also reads the program's project file in the working
directory (.vscode/mcp.json, .cursor/mcp.json, .gemini/settings.json, Claude Code's .mcp.json),
whose entries replace the user file's of the same name; with neither file it says so. In this
process (hostlink_here): what the command reads and writes is under test, not its process."""

from __future__ import annotations

import json

import pytest

from mcp_config_support import hostlink_here, user_file

PROJECT_ONLY = [
    ("vscode", ".vscode/mcp.json", {"servers": {"docs": {"type": "stdio", "command": "uvx", "args": ["docs"]}}}),
    ("cursor", ".cursor/mcp.json", {"mcpServers": {"docs": {"command": "uvx", "args": ["docs"]}}}),
    ("gemini", ".gemini/settings.json", {"mcpServers": {"docs": {"command": "uvx", "args": ["docs"]}}}),
    ("claude-code", ".mcp.json", {"mcpServers": {"docs": {"type": "stdio", "command": "uvx", "args": ["docs"]}}}),
]


@pytest.mark.parametrize(("program", "relative", "document"), PROJECT_ONLY)
def test_the_project_file_alone_is_read(tmp_path, program, relative, document):
    path = tmp_path / "project" / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document))
    result = hostlink_here(tmp_path, "mcp", "import", "--from", program, "--yes")
    assert result.returncode == 0, result.stderr
    assert json.loads(user_file(tmp_path).read_text())["mcpServers"] == {"docs": {"command": "uvx", "args": ["docs"]}}
    assert relative in result.stdout


def test_project_entries_replace_the_user_files(tmp_path):
    user = tmp_path / "home" / ".cursor" / "mcp.json"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(json.dumps({"mcpServers": {"docs": {"command": "old"}, "mine": {"command": "mine"}}}))
    project = tmp_path / "project" / ".cursor" / "mcp.json"
    project.parent.mkdir(parents=True, exist_ok=True)
    project.write_text(json.dumps({"mcpServers": {"docs": {"command": "new"}}}))
    result = hostlink_here(tmp_path, "mcp", "import", "--from", "cursor", "--yes")
    assert result.returncode == 0, result.stderr
    assert json.loads(user_file(tmp_path).read_text())["mcpServers"] == {"docs": {"command": "new"},
                                                                          "mine": {"command": "mine"}}


def test_neither_file_names_both(tmp_path):
    result = hostlink_here(tmp_path, "mcp", "import", "--from", "vscode", "--yes")
    assert result.returncode == 2
    assert "no VS Code configuration here" in result.stderr and ".vscode/mcp.json" in result.stderr
