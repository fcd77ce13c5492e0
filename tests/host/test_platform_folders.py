"""Where other programs keep their settings on each system (the seam's `folders.app_data`), and
what `hostlink mcp serve --show-config` and `mcp import --from` make of it: driven for Linux,
macOS and Windows on any system, since the system is an argument."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hostlink.gateway.snippets import show_config
from hostlink.host.platform import folders, shell
from hostlink.mcp.config.importer import source_path

LINUX = {"HOME": "/home/u", "XDG_CONFIG_HOME": "/xdg"}
MAC = {"HOME": "/Users/u", "XDG_CONFIG_HOME": "/xdg"}  # macOS programs do not follow XDG
WINDOWS = {"USERPROFILE": "C:/Users/u", "APPDATA": "C:/Users/u/AppData/Roaming", "HOME": "/elsewhere"}


def test_app_data_on_each_system():
    assert folders.app_data(LINUX, "linux") == Path("/xdg")
    assert folders.app_data({"HOME": "/home/u", "XDG_CONFIG_HOME": "relative"}, "linux") == Path("/home/u/.config")
    assert folders.app_data(MAC, "darwin") == Path("/Users/u/Library/Application Support")
    assert folders.app_data(WINDOWS, "win32") == Path("C:/Users/u/AppData/Roaming")
    assert folders.app_data({"USERPROFILE": "C:/Users/u"}, "win32") == Path("C:/Users/u/AppData/Roaming")
    assert folders.home_folder(WINDOWS, "win32") == Path("C:/Users/u")
    assert folders.home_folder(WINDOWS, "linux") == Path("/elsewhere")


@pytest.mark.parametrize(("environ", "system", "desktop", "vscode"), [
    (LINUX, "linux", "/xdg/Claude/claude_desktop_config.json", "/xdg/Code/User/mcp.json"),
    (MAC, "darwin", "/Users/u/Library/Application Support/Claude/claude_desktop_config.json",
     "/Users/u/Library/Application Support/Code/User/mcp.json"),
    (WINDOWS, "win32", "C:/Users/u/AppData/Roaming/Claude/claude_desktop_config.json",
     "C:/Users/u/AppData/Roaming/Code/User/mcp.json"),
])
def test_each_programs_file_on_each_system(environ, system, desktop, vscode):
    home = folders.home_folder(environ, system)
    assert source_path("claude-desktop", environ, system) == Path(desktop)
    assert source_path("vscode", environ, system) == Path(vscode)
    assert source_path("claude-code", environ, system) == home / ".claude.json"
    assert source_path("cursor", environ, system) == home / ".cursor" / "mcp.json"
    shown = show_config("claude-desktop", "hostlink", ["mcp", "serve"], environ, system)
    assert shown.startswith(f"// in {Path(desktop)} (Settings > Developer > Edit Config)")
    assert f" or {Path(vscode)} (MCP: Open User Configuration)" in show_config("vscode", "hostlink", ["mcp", "serve"],
                                                                                environ, system)


def test_the_claude_mcp_add_line_is_quoted_for_this_systems_shell(monkeypatch):
    command = "/opt/my tools/hostlink"
    assert show_config("claude-code", command, ["mcp", "serve"], LINUX, "linux").endswith(
        "claude mcp add hostlink -- '/opt/my tools/hostlink' mcp serve")
    monkeypatch.setattr(sys, "platform", "win32")
    assert shell.word(r"C:\Users\u\.venv\Scripts\hostlink.exe") == r"C:\Users\u\.venv\Scripts\hostlink.exe"
    assert shell.word(r"C:\Program Files\it's\hostlink.exe") == r"'C:\Program Files\it''s\hostlink.exe'"
    assert shell.word("$env:X") == "'$env:X'" and shell.word("@args") == "'@args'" and shell.word("a,b") == "'a,b'"
