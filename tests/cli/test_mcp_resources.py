"""`hostlink mcp resources | read | prompts | prompt` (issue 37): what the model's `mcp` tool
answers to the action of the same name, with `call`'s errors, exit statuses and `--json`. The tests of
resources and read and of prompts and prompt run each command once as a real `hostlink` process
against a stdio demo server; the rest (`--json`, refused arguments), about what the commands decide,
in this process (hostlink_here) against the module's one demo server over HTTP."""

from __future__ import annotations

import json
import os
import stat
import sys

import pytest

from gateway_support import live_mentioning
from mcp_cli_support import EVERY, configure, hostlink, hostlink_here, needs_everything

DEMO = {"command": sys.executable, "args": ["-m", "hostlink.demo"], "requestTimeoutMs": 120_000}  # a loaded machine
README = "hostlink demo server: tools echo, add, big_output, swatch, fail; a colour template; a prompt.\n"


@pytest.fixture
def demo_web(demo_http):
    """The demo server's config entry: the module's one demo server over HTTP."""
    return {"url": demo_http.url, "requestTimeoutMs": 120_000}


def over_http(tmp_path, demo_web):
    """The environment of a test's in-process runs: `demo` the module's demo server over HTTP."""
    return configure(tmp_path / "over-http", {"demo": demo_web})


def test_resources_and_read_answer_as_the_mcp_tool_does(tmp_path, demo_web):
    env = configure(tmp_path, {"demo": DEMO})
    listed = hostlink(env, tmp_path, "mcp", "resources", "demo")
    assert (listed.returncode, listed.stdout) == (
        0, "- demo://readme (readme, text/plain): About this server.\n[resources 1-1 of 1]\n"), listed.stderr
    shared = over_http(tmp_path, demo_web)
    as_json = json.loads(hostlink_here(shared, tmp_path, "mcp", "resources", "demo", "--json").stdout)
    assert as_json == [{"server": "demo", "name": "readme", "uri": "demo://readme",
                        "description": "About this server.", "mimeType": "text/plain"}]
    read = hostlink(env, tmp_path, "mcp", "read", "demo", "demo://readme")
    assert (read.returncode, read.stdout) == (0, f"[resource demo://readme (text/plain)]\n{README}")
    read_json = json.loads(hostlink_here(shared, tmp_path, "mcp", "read", "demo", "demo://readme", "--json").stdout)
    assert read_json == {"isError": False, "content": [
        {"type": "text", "text": f"[resource demo://readme (text/plain)]\n{README}"}]}
    assert live_mentioning(str(tmp_path)) == []


def test_read_writes_the_whole_resource_to_a_file(tmp_path, demo_web):
    env = configure(tmp_path, {"demo": demo_web})
    target = tmp_path / "readme.txt"
    read = hostlink_here(env, tmp_path, "mcp", "read", "demo", "demo://readme", "--output", str(target))
    assert (read.returncode, read.stdout) == (0, "")
    assert target.read_text() == f"[resource demo://readme (text/plain)]\n{README}"
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600


def test_read_failures_have_call_s_codes(tmp_path, demo_web):
    env = configure(tmp_path, {"demo": demo_web})
    unknown = hostlink_here(env, tmp_path, "mcp", "read", "demo", "demo://colour/mauve", "--json")
    assert unknown.returncode == 3 and json.loads(unknown.stdout)["error"] == {
        "code": "request_failed",
        "message": "MCP server 'demo' rejected resources/read: unknown colour; known: "
                   "amber, azure, crimson, emerald, indigo, ivory"}
    misspelt = hostlink_here(env, tmp_path, "mcp", "read", "dmeo", "demo://readme")
    assert misspelt.returncode == 2 and "unknown MCP server 'dmeo'" in misspelt.stderr
    assert "demo" in misspelt.stderr


def test_prompts_and_prompt(tmp_path, demo_web):
    env = configure(tmp_path, {"demo": DEMO})
    listed = hostlink(env, tmp_path, "mcp", "prompts", "demo")
    assert listed.stdout == "- poem(colour): Ask for a short poem about a colour.\n[prompts 1-1 of 1]\n", listed.stderr
    shared = over_http(tmp_path, demo_web)
    assert json.loads(hostlink_here(shared, tmp_path, "mcp", "prompts", "demo", "--json").stdout) == [
        {"server": "demo", "name": "poem", "description": "Ask for a short poem about a colour.",
         "arguments": [{"name": "colour", "required": True}]}]
    got = hostlink(env, tmp_path, "mcp", "prompt", "demo", "poem", "-", stdin='{"colour": "azure"}')
    assert (got.returncode, got.stdout) == (
        0, "[prompt: Ask for a short poem about a colour.]\nuser: Write a four-line poem about the colour azure.\n")
    as_json = json.loads(hostlink_here(shared, tmp_path, "mcp", "prompt", "demo", "poem", '{"colour": "ivory"}',
                                       "--json").stdout)
    assert as_json["isError"] is False and as_json["content"][-1]["text"].endswith("the colour ivory.")
    wrong = hostlink_here(shared, tmp_path, "mcp", "prompt", "demo", "poem", '{"colour": 7}')
    assert (wrong.returncode, wrong.stderr) == (2, "prompt arguments must be strings: 'colour'\n")
    broken = hostlink_here(shared, tmp_path, "mcp", "prompt", "demo", "poem", '{"colour": ', "--json")
    assert broken.returncode == 2 and json.loads(broken.stdout)["error"]["code"] == "invalid_arguments"
    assert live_mentioning(str(tmp_path)) == []


def test_without_a_server_every_server_is_listed_and_a_failure_is_its_exit_status(tmp_path, demo_web):
    env = configure(tmp_path, {"demo": demo_web, "gone": {"command": str(tmp_path / "no-such-server")},
                               "off": {**DEMO, "disabled": True}})
    listed = hostlink_here(env, tmp_path, "mcp", "resources")
    assert listed.returncode == 3
    assert listed.stdout == "demo:\n- demo://readme (readme, text/plain): About this server.\n[resources 1-1 of 1]\n"
    assert listed.stderr.startswith("hostlink mcp: MCP server 'gone': command not found")
    as_json = hostlink_here(env, tmp_path, "mcp", "prompts", "--json")
    assert as_json.returncode == 3 and [entry["name"] for entry in json.loads(as_json.stdout)] == ["poem"]
    assert live_mentioning(str(tmp_path)) == []


@needs_everything
def test_server_everything_pages_and_says_what_it_lacks(tmp_path):
    env = configure(tmp_path, {"everything": {**EVERY, "requestTimeoutMs": 120_000}, "demo": DEMO})
    listed = hostlink_here(env, tmp_path, "mcp", "resources", "everything", "--offset", "5")
    assert listed.returncode == 0 and listed.stdout.splitlines()[-1] == "[resources 6-7 of 7]"
    assert len(json.loads(hostlink_here(env, tmp_path, "mcp", "resources", "everything", "--json").stdout)) == 7
    prompts = hostlink_here(env, tmp_path, "mcp", "prompts", "everything")
    assert "- args-prompt(city, state?): A prompt with two arguments, one required and one optional\n" in prompts.stdout
    got = hostlink_here(env, tmp_path, "mcp", "prompt", "everything", "args-prompt", '{"city": "Paris", "state": "TX"}')
    assert (got.returncode, got.stdout) == (0, "user: What's weather in Paris, TX?\n")
    assert live_mentioning(str(tmp_path)) == []
