"""`includeTools` / `excludeTools`: a filtered tool is never listed, searched, described
or callable (not even by its exact name), and status says how many each filter hides —
with the real reference server."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hostlink.host import CancelSignal
from hostlink.mcp.config.load import ConfigError, parse_document
from hostlink.mcp.config.schema import SchemaError, parse_server
from hostlink.mcp.extension import McpExtension
from hostlink.mcp.runtime.filters import filter_tools, hidden_by
from mcp_runtime_support import Host, text

ENTRY = Path(__file__).parents[2] / "node_modules/@modelcontextprotocol/server-everything/dist/index.js"
NODE = shutil.which("node")
needs_everything = pytest.mark.skipif(not (ENTRY.is_file() and NODE) and not os.environ.get("CI"),
                                      reason="npm peer @modelcontextprotocol/server-everything or node is missing")
EVERYTHING = {"command": NODE or "node", "args": [str(ENTRY), "stdio"],
              "includeTools": ["echo", "get-*"], "excludeTools": ["get-sum", "get-tiny-*"]}


class Named:
    def __init__(self, name: str) -> None:
        self.name = name


def test_patterns_are_exact_names_or_case_sensitive_globs():
    config = parse_server({"command": "x", "includeTools": ["echo", "get-*"], "excludeTools": ["get-sum"]})
    assert [hidden_by(config, n) for n in ("echo", "get-env", "get-sum", "Echo", "echo2", "toggle")] == [
        None, None, "excludeTools", "includeTools", "includeTools", "includeTools"]
    kept, hidden = filter_tools(config, [Named(n) for n in ("echo", "get-env", "get-sum", "toggle")])
    assert [t.name for t in kept] == ["echo", "get-env"] and hidden == (1, 1)
    everything = parse_server({"url": "https://a.example/mcp", "excludeTools": ["*-admin"]})
    assert hidden_by(everything, "drop-admin") == "excludeTools" and hidden_by(everything, "drop") is None
    nothing = parse_server({"command": "x", "includeTools": []})  # an empty allow list allows nothing
    assert hidden_by(nothing, "echo") == "includeTools"


@pytest.mark.parametrize(("entry", "field"), [
    ({"command": "x", "includeTools": "echo"}, "includeTools"),
    ({"command": "x", "includeTools": [""]}, "includeTools.0"),
    ({"command": "x", "excludeTools": [1]}, "excludeTools.0"),
    ({"command": "x", "excludeTools": ["a"] * 257}, "excludeTools"),
])
def test_bad_filters_are_refused_naming_the_field(entry, field):
    with pytest.raises(SchemaError) as refused:
        parse_server(entry)
    assert refused.value.field == field
    with pytest.raises(ConfigError, match=f"mcpServers.s.{field}"):
        parse_document(json.dumps({"mcpServers": {"s": entry}}), Path("mcp.json"), {})


@pytest.fixture
async def host(tmp_path, monkeypatch):
    monkeypatch.setenv("HOSTLINK_RUNTIME_DIR", str(tmp_path / "runtime"))
    async with Host(McpExtension(servers={"everything": parse_server(EVERYTHING)}), tmp_path) as running:
        yield running


@needs_everything
@pytest.mark.anyio
async def test_filtered_tools_are_neither_listed_searched_nor_callable(host):
    listing = text(await host.run(action="tools", server="everything", limit=50))
    assert "tool 'echo'" in listing and "tool 'get-structured-content'" in listing
    for gone in ("get-sum", "get-tiny-image", "toggle-simulated-logging", "trigger-long-running-operation"):
        assert f"'{gone}'" not in listing
    assert all(line.startswith(("- server 'everything' tool 'echo'", "- server 'everything' tool 'get-",
                                "  input schema", "[tools"))
               for line in listing.splitlines())
    assert "get-sum" not in text(await host.run(action="tools", query="sum"))  # every server searched

    filtered = await host.run(action="call", server="everything", tool="get-sum", args={"a": 1, "b": 2})
    unknown = await host.run(action="call", server="everything", tool="no-such-tool", args={})
    assert filtered.is_error and unknown.is_error
    assert filtered.details["error"] == unknown.details["error"] == "unknown_tool"
    for result, name in ((filtered, "get-sum"), (unknown, "no-such-tool")):
        assert text(result).startswith(f"MCP server 'everything' does not offer a tool named '{name}' to the model")
    assert "get-sum" not in text(filtered).split("named 'get-sum'", 1)[1]  # never suggested either

    assert "hello" in text(await host.run(action="call", server="everything", tool="echo",
                                          args={"message": "hello"}))
    status = text(await host.run(action="status"))
    assert "hidden by includeTools" in status and "2 hidden by excludeTools" in status
    shown = await host.session.run_command("mcp", ["tools", "everything"], CancelSignal())
    assert "echo" in shown and "get-sum" not in shown and "get-tiny-image" not in shown


def hostlink(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "config" / "hostlink" / "mcp.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps({"mcpServers": {"everything": EVERYTHING}}))
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config"), "HOME": str(tmp_path),
           "HOSTLINK_RUNTIME_DIR": str(tmp_path / "rt")}
    result = subprocess.run([sys.executable, "-c", "from hostlink.cli import main; main()", *argv],
                            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    return result


@needs_everything
def test_the_cli_sees_only_what_the_filters_keep(tmp_path):
    names = [tool["name"] for tool in json.loads(hostlink(tmp_path, "mcp", "tools", "everything", "--json").stdout)]
    assert "echo" in names and all(name == "echo" or name.startswith("get-") for name in names)
    assert "get-sum" not in names and "get-tiny-image" not in names

    called = hostlink(tmp_path, "mcp", "call", "everything", "get-sum", '{"a": 1, "b": 2}', "--json")
    assert called.returncode == 2 and json.loads(called.stdout)["error"]["code"] == "unknown_tool"

    connected = hostlink(tmp_path, "mcp", "connect", "everything")
    assert connected.returncode == 0, connected.stderr
    assert "hidden by includeTools" in connected.stdout and "2 hidden by excludeTools" in connected.stdout
    assert json.loads(hostlink(tmp_path, "mcp", "connect", "everything", "--json").stdout)["tools"] == len(names)

    status = hostlink(tmp_path, "mcp", "status")
    assert "everything: tool filters: includeTools (2 patterns), excludeTools (2 patterns)" in status.stdout
