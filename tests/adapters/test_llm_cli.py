"""The plugin as the real `llm` CLI loads it: models, tools, commands, and its start cost."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from llm_support import LlmDirs, leftover_files, leftover_processes, run_llm

NO_CLAUDE_PATH = f"{Path(sys.executable).parent}:/usr/bin:/bin"


@pytest.fixture
def dirs(tmp_path: Path) -> LlmDirs:
    yield LlmDirs(tmp_path).create()
    assert leftover_processes(str(tmp_path)) == []


def test_llm_models_lists_the_claude_code_models(dirs):
    result = run_llm(dirs, "models", "list", "--json")
    assert result.returncode == 0, result.stderr
    models = {m["model_id"]: m for m in json.loads(result.stdout)}
    for alias in ("opus", "sonnet", "haiku"):
        model = models[f"claude-code/{alias}"]
        assert model["supports_tools"] and model["can_stream"]


def test_llm_tools_lists_mcp(dirs):
    result = run_llm(dirs, "tools", "list", "--json")
    assert result.returncode == 0, result.stderr
    tools = json.loads(result.stdout)["tools"]
    mcp = next(tool for tool in tools if tool["name"] == "mcp")
    assert mcp["plugin"] == "hostlink"
    assert "action" in mcp["arguments"]["properties"]
    assert "claude_code_web_search" in {tool["name"] for tool in tools}
    # Listing tools starts no session: no MCP server was spawned, no private state made.
    assert leftover_files(dirs.runtime) == []


def test_llm_mcp_status_reads_the_user_config(dirs):
    result = run_llm(dirs, "mcp", "status")
    assert result.returncode == 0, result.stderr
    assert "demo" in result.stdout
    help_result = run_llm(dirs, "mcp", "--help")
    assert help_result.returncode == 0 and "status" in help_result.stdout


def test_llm_claude_code_group_is_mounted(dirs):
    result = run_llm(dirs, "claude-code", "--help")
    assert result.returncode == 0, result.stderr
    assert "Usage: llm claude-code" in result.stdout


def test_llm_help_lists_the_groups(dirs):
    result = run_llm(dirs, "--help")
    assert result.returncode == 0, result.stderr
    assert "mcp " in result.stdout and "claude-code " in result.stdout


def test_without_claude_models_list_and_prompt_explains(dirs):
    listed = run_llm(dirs, "models", path=NO_CLAUDE_PATH)
    assert listed.returncode == 0, listed.stderr
    assert "claude-code/sonnet (unavailable)" in listed.stdout

    result = run_llm(dirs, "-m", "claude-code/sonnet", "hi", path=NO_CLAUDE_PATH)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith("Error: claude-code/sonnet is unavailable: ")
    assert "claude" in result.stderr.split("unavailable: ", 1)[1]
    assert "Traceback" not in result.stderr


PROBE = """
import json, sys
import llm.cli
loaded = set(sys.modules)
llm.get_models(); llm.get_tools()
print(json.dumps({"cli": sorted(loaded), "hooks": sorted(set(sys.modules) - loaded)}))
"""


def _probe(dirs: LlmDirs, **extra: str) -> dict[str, list[str]]:
    result = subprocess.run([sys.executable, "-c", PROBE], env=dirs.env(**extra), capture_output=True,
                            text=True, cwd=dirs.project, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_loading_the_plugin_costs_no_heavy_imports(dirs):
    with_plugin = _probe(dirs)
    without = _probe(dirs, LLM_LOAD_PLUGINS="")
    assert "hostlink.adapters.llm" in with_plugin["cli"]
    # What every llm command (even --help) loads: the entry module, not the host machinery.
    assert "hostlink.adapters.llm.llm_host" not in with_plugin["cli"]
    assert "hostlink.host" not in with_plugin["cli"]
    extra = set(with_plugin["cli"]) - set(without["cli"])
    # llm itself already imports httpx2 and pydantic; the plugin adds only hostlink's
    # own light modules and standard-library ones to llm's start.
    assert {name.split(".")[0] for name in extra} <= {"hostlink"} | set(sys.stdlib_module_names), extra
    everything = set(with_plugin["cli"]) | set(with_plugin["hooks"])
    for heavy in ("mcp", "mcp_types", "keyring", "secretstorage", "jeepney"):
        assert heavy not in everything


def test_tool_listing_and_status_leave_nothing_behind(dirs):
    for args in (("tools",), ("mcp", "status"), ("models",)):
        assert run_llm(dirs, *args).returncode == 0
    assert leftover_files(dirs.runtime) == []


def test_listing_never_runs_claude_or_starts_a_session(dirs, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    ran = tmp_path / "claude-ran"
    fake = bin_dir / "claude"
    fake.write_text(f"#!/bin/sh\necho \"$@\" >> {ran}\n")
    fake.chmod(0o755)
    path = f"{bin_dir}:{NO_CLAUDE_PATH}"
    listed = run_llm(dirs, "models", path=path)
    assert listed.returncode == 0, listed.stderr
    (line,) = [line for line in listed.stdout.splitlines() if "claude-code/sonnet" in line]
    assert "unavailable" not in line  # found on PATH, and only looked up
    for args in (("tools",), ("--help",), ("mcp", "status"), ("plugins",)):
        assert run_llm(dirs, *args, path=path).returncode == 0
    assert not ran.exists()
    assert leftover_files(dirs.runtime) == []
