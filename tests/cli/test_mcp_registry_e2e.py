"""From a fresh configuration to a working call with no command line typed by hand: `search`,
`add --from-registry`, then `call`, through a fixture registry on 127.0.0.1 whose records name
the real packages. npx finds `@modelcontextprotocol/server-memory@2026.8.31` in the shared
node_modules (the project's own npm install), and uvx installs `mcp-server-time==2026.10.19`
offline from the wheels scripts/setup-test keeps in `.wheelhouse/`, so nothing is downloaded."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from mcp_config_support import environment, hostlink, user_file
from registry_support import fixture_registry

NODE_MODULES = Path(__file__).parents[2] / "node_modules"
MEMORY_PACKAGE = NODE_MODULES / "@modelcontextprotocol/server-memory/package.json"
MEMORY_NAME = "io.github.modelcontextprotocol/server-memory"
WHEELHOUSE = Path(__file__).parents[2] / ".wheelhouse"
BIN = Path(sys.executable).parent  # uvx is installed with the test extra, beside this interpreter


@pytest.mark.skipif(not (MEMORY_PACKAGE.is_file() and shutil.which("npx")),
                    reason="npx or the npm peer @modelcontextprotocol/server-memory is missing")
def test_search_add_and_call_the_npm_memory_server(tmp_path):
    assert json.loads(MEMORY_PACKAGE.read_text())["version"] == "2026.8.31"  # the version the record pins
    project = tmp_path / "project"
    project.mkdir()
    (project / "node_modules").symlink_to(NODE_MODULES.resolve())  # where npx looks before the network
    graph = tmp_path / "memory.jsonl"
    with fixture_registry() as registry:
        env = environment(tmp_path, HOSTLINK_MCP_REGISTRY=registry.url)
        found = hostlink(tmp_path, "mcp", "search", "memory", "--json", env=env)
        assert found.returncode == 0, found.stderr
        (name,) = [server["name"] for server in json.loads(found.stdout)["servers"]]
        assert name == MEMORY_NAME
        added = hostlink(tmp_path, "mcp", "add", "memory", "--from-registry", name,
                         "--input", f"MEMORY_FILE_PATH={graph}", env=env)
        assert added.returncode == 0, added.stderr
    assert json.loads(user_file(tmp_path).read_text())["mcpServers"]["memory"]["command"] == "npx"
    entity = {"entities": [{"name": "hostlink", "entityType": "project", "observations": ["added from a registry"]}]}
    created = hostlink(tmp_path, "mcp", "call", "memory", "create_entities", json.dumps(entity), "--json", env=env)
    assert created.returncode == 0, created.stderr
    read = hostlink(tmp_path, "mcp", "call", "memory", "read_graph", "{}", "--json", env=env)
    assert read.returncode == 0, read.stderr
    assert "added from a registry" in json.dumps(json.loads(read.stdout)["content"])
    assert "added from a registry" in graph.read_text()
    assert list((tmp_path / "home").rglob("server-memory")) == []  # npx downloaded nothing into its cache


@pytest.mark.skipif(not ((BIN / "uvx").is_file() and list(WHEELHOUSE.glob("mcp_server_time-*.whl")))
                    and not os.environ.get("CI"), reason="uvx or the wheelhouse of scripts/setup-test is missing")
def test_search_add_and_call_the_pypi_time_server(tmp_path):
    uv_config = tmp_path / "home" / ".config" / "uv" / "uv.toml"  # the server's HOME: uv reads its config there
    uv_config.parent.mkdir(parents=True)
    uv_config.write_text(f'offline = true\nno-index = true\nfind-links = [{json.dumps(str(WHEELHOUSE))}]\n'
                         'python-downloads = "never"\n')
    env = environment(tmp_path, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    with fixture_registry() as registry:
        env["HOSTLINK_MCP_REGISTRY"] = registry.url
        (name,) = [s["name"] for s in json.loads(hostlink(tmp_path, "mcp", "search", "time", "--json",
                                                          env=env).stdout)["servers"]]
        added = hostlink(tmp_path, "mcp", "add", "time", "--from-registry", name, env=env)
        assert added.returncode == 0, added.stderr
        assert "it runs: uvx mcp-server-time==2026.10.19 --local-timezone UTC" in added.stdout
    called = hostlink(tmp_path, "mcp", "call", "time", "convert_time",
                      json.dumps({"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
                      "--json", env=env)
    assert called.returncode == 0, called.stderr
    assert "21:00" in json.dumps(json.loads(called.stdout)["content"])
