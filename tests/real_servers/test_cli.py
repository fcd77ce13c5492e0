"""Each real server through the `hostlink mcp` CLI, as a person adds and uses it: its tools, a
call, its resources and prompts where it has them, and a wrong argument. Every result is
shown once and in the server's order, nothing runs after a command, and an error names what
to fix.

The commands run up front, a few at a time (`PLANNED`), and each test reads the runs it needs.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from real_servers_support import (
    BIG_LINE,
    COMMIT,
    FETCH_AGENT,
    HELLO,
    PAGE_TEXT,
    PAGE_TITLE,
    PNG,
    ROBOTS_AGENT,
    Lane,
    Run,
)

pytestmark = pytest.mark.real_servers
WORKERS = 3  # commands at once: most of a command's time is a server starting


def commands(lane: Lane) -> dict[str, tuple[str, ...]]:
    """Every command of the module by name."""
    fs = lane.root / "fs"

    def call(server: str, tool: str, args: dict[str, object]) -> tuple[str, ...]:
        return ("mcp", "call", server, tool, json.dumps(args))

    return {
        "fs tools": ("mcp", "tools", "fs"),
        "fs read": call("fs", "read_text_file", {"path": str(fs / "hello.txt")}),
        "fs big": call("fs", "read_text_file", {"path": str(fs / "big.txt")}),
        "fs image": call("fs", "read_media_file", {"path": str(fs / "pixel.png")}),
        "fs bad": call("fs", "read_text_file", {"path": str(fs / "hello.txt"), "head": True}),
        "fs resources": ("mcp", "resources", "fs"),
        "memory create": call("memory", "create_entities", {"entities": [
            {"name": "lane", "entityType": "test", "observations": ["runs offline"]}]}),
        "memory graph": call("memory", "read_graph", {}),
        "memory resources": ("mcp", "resources", "memory", "--json"),
        "memory read": ("mcp", "read", "memory", "memory://knowledge-graph"),
        "memory bad": call("memory", "create_entities", {"entities": [{"name": "nameless"}]}),
        "thinking": call("thinking", "sequentialthinking", {
            "thought": "one step", "thoughtNumber": 1, "totalThoughts": 1, "nextThoughtNeeded": False}),
        "thinking bad": call("thinking", "sequentialthinking", {
            "thought": "one step", "thoughtNumber": "one", "totalThoughts": 1, "nextThoughtNeeded": False}),
        "everything tools": ("mcp", "tools", "everything"),
        "everything echo": call("everything", "echo", {"message": "hello lane"}),
        "everything image": call("everything", "get-tiny-image", {}),
        "everything structured": call("everything", "get-structured-content", {"location": "New York"}),
        "everything bad": call("everything", "get-sum", {"a": "two", "b": 3}),
        "everything resources": ("mcp", "resources", "everything"),
        "everything read": ("mcp", "read", "everything", "demo://resource/static/document/features.md"),
        "everything prompts": ("mcp", "prompts", "everything", "--json"),
        "everything prompt": ("mcp", "prompt", "everything", "args-prompt", '{"city": "Paris"}'),
        "everything prompt bad": ("mcp", "prompt", "everything", "args-prompt", '{"city": 7}'),
        "http tools": ("mcp", "tools", "everything-http"),
        "http echo": call("everything-http", "echo", {"message": "hello over http"}),
        "http resources": ("mcp", "resources", "everything-http", "--json"),
        "http prompt": ("mcp", "prompt", "everything-http", "simple-prompt"),
        "playwright tools": ("mcp", "tools", "playwright"),
        "playwright navigate": call("playwright", "browser_navigate", {"url": lane.page}),
        "playwright bad": call("playwright", "browser_navigate", {}),
        "git log": call("git", "git_log", {"repo_path": str(lane.root / "repo")}),
        "git bad": call("git", "git_status", {}),
        "time now": call("time", "get_current_time", {"timezone": "UTC"}),
        "time bad": call("time", "get_current_time", {"timezone": "Nowhere/Nope"}),
        "fetch": call("fetch", "fetch", {"url": lane.page}),
        "fetch prompt": ("mcp", "prompt", "fetch", "fetch", json.dumps({"url": lane.page})),
        "fetch robots": call("fetch-robots", "fetch", {"url": lane.page}),
        "all prompts": ("mcp", "prompts"),
    }


# commands that depend on an earlier one run after it; the rest in any order
CHAINS = [["playwright navigate"], ["all prompts"], ["memory create", "memory graph", "memory read"],
          ["fetch", "fetch prompt", "fetch robots"]]


@pytest.fixture(scope="module", autouse=True)
def planned(lane: Lane) -> Iterator[dict[str, tuple[str, ...]]]:
    """Every command started in the background, WORKERS at a time, slowest first."""
    named = commands(lane)
    chained = {name for chain in CHAINS for name in chain}
    with ThreadPoolExecutor(WORKERS) as pool:
        for chain in [*CHAINS, *([name] for name in named if name not in chained)]:
            pool.submit(lambda chain=chain: [lane.cli(*named[name]) for name in chain])
        yield named


@pytest.fixture
def run(lane: Lane, planned: dict[str, tuple[str, ...]]):
    """The finished command of that name; a Traceback or a process left running fails it."""
    def finished(name: str) -> Run:
        done = lane.cli(*planned[name])
        assert "Traceback" not in done.stdout + done.stderr, done.stderr
        assert done.left == [], f"{name}: still running after the command: {done.left}"
        return done

    return finished


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line]


# --- filesystem ------------------------------------------------------------------------------


def test_filesystem_lists_and_reads(run):
    tools = run("fs tools")
    assert tools.returncode == 0 and lines(tools.stdout)[1].startswith("read_text_file")
    read = run("fs read")
    assert read.returncode == 0 and HELLO.strip() in read.stdout


def test_filesystem_text_is_shown_once(run):
    assert run("fs read").stdout == HELLO  # the text ends its line: no blank line after it


def test_filesystem_big_file_prints_its_own_size_plus_one_line(run):
    big = run("fs big")
    assert big.returncode == 0 and len(big.stdout) <= len(BIG_LINE) * 801 and big.stderr == ""
    assert big.stdout.rstrip("\n") == (BIG_LINE * 800).rstrip("\n")


def test_filesystem_image_is_a_placeholder_never_base64(run):
    image = run("fs image")
    assert image.returncode == 0 and base64.b64encode(PNG).decode()[:40] not in image.stdout
    assert lines(image.stdout) == [f"[image image/png, {len(base64.b64encode(PNG))} base64 chars]"]


def test_filesystem_bad_argument_names_the_parameter(run):
    bad = run("fs bad")
    assert bad.returncode == 2 and bad.stdout == ""
    assert "at head" in bad.stderr and "parameters: path (string, required)" in bad.stderr


def test_filesystem_bad_argument_is_quoted_in_json(run):
    assert "true is not of type" in run("fs bad").stderr


def test_filesystem_offers_no_resources(run):
    listed = run("fs resources")
    assert (listed.returncode, listed.stdout) == (0, "fs: no resources (the server offers none)\n")


# --- memory ----------------------------------------------------------------------------------


def test_memory_keeps_its_graph_from_one_command_to_the_next(run):
    assert run("memory create").returncode == 0
    graph = run("memory graph")
    assert graph.returncode == 0 and "runs offline" in graph.stdout
    listed = json.loads(run("memory resources").stdout)
    assert [(entry["server"], entry["uri"]) for entry in listed] == [("memory", "memory://knowledge-graph")]
    read = run("memory read")
    assert read.returncode == 0 and lines(read.stdout)[0] == "[resource memory://knowledge-graph (application/json)]"
    assert "runs offline" in read.stdout


def test_memory_result_is_shown_once(run):
    assert run("memory create").stdout.count("runs offline") == 1
    assert run("memory graph").stdout.count("runs offline") == 1


def test_memory_bad_argument_names_the_parameter(run):
    bad = run("memory bad")
    assert bad.returncode == 2 and '"entityType" is a required property at entities/0' in bad.stderr


# --- sequential thinking ---------------------------------------------------------------------


def test_sequential_thinking_answers_once(run):
    thought = run("thinking")
    assert thought.returncode == 0 and thought.stdout.count('"thoughtNumber":1') == 1
    bad = run("thinking bad")
    assert bad.returncode == 2 and "at thoughtNumber" in bad.stderr


# --- everything, over stdio and over Streamable HTTP -------------------------------------------


def test_everything_calls(run):
    assert "echo" in run("everything tools").stdout
    assert run("everything echo").stdout == "Echo: hello lane\n"
    structured = run("everything structured")
    assert structured.returncode == 0 and lines(structured.stdout) == [
        '{"temperature":33,"conditions":"Cloudy","humidity":82}']
    bad = run("everything bad")
    assert bad.returncode == 2 and "at a" in bad.stderr and "parameters: a (number, required)" in bad.stderr


def test_everything_image_stays_between_its_texts(run):
    assert [line.split(",")[0] for line in lines(run("everything image").stdout)] == [
        "Here's the image you requested:", "[image image/png", "The image above is the MCP logo."]


def test_everything_resources_and_prompts(run):
    listed = run("everything resources")
    assert listed.returncode == 0
    assert "- demo://resource/static/document/features.md (features.md, text/markdown): " in listed.stdout
    read = run("everything read")
    assert lines(read.stdout)[:2] == ["[resource demo://resource/static/document/features.md (text/markdown)]",
                                      "# Everything Server - Features"]
    prompts = json.loads(run("everything prompts").stdout)
    assert {"server": "everything", "name": "simple-prompt", "title": "Simple Prompt",
            "description": "A prompt with no arguments"} in prompts
    prompt = run("everything prompt")
    assert (prompt.returncode, prompt.stdout) == (0, "user: What's weather in Paris?\n")
    bad = run("everything prompt bad")
    assert bad.returncode == 2 and "prompt arguments must be strings: 'city'" in bad.stderr


def test_everything_over_streamable_http(run):
    assert "echo" in run("http tools").stdout
    assert run("http echo").stdout == "Echo: hello over http\n"
    assert any(entry["uri"].startswith("demo://resource/static/document/")
               for entry in json.loads(run("http resources").stdout))
    prompt = run("http prompt")
    assert prompt.returncode == 0 and lines(prompt.stdout)[-1].startswith("user: This is a simple prompt")


# --- playwright on the Debian chromium ----------------------------------------------------------


def test_playwright_browses_a_loopback_page_and_leaves_no_browser(run, lane):
    assert "browser_navigate" in run("playwright tools").stdout
    page = run("playwright navigate")  # `run` checks that no browser process is left
    assert page.returncode == 0 and f"- Page Title: {PAGE_TITLE}" in page.stdout
    assert "/page.html" in [path for path, _ in lane.seen]
    bad = run("playwright bad")
    assert bad.returncode == 2 and '"url" is a required property' in bad.stderr


# --- git, time, fetch (PyPI) ---------------------------------------------------------------------


def test_git(run):
    log = run("git log")
    assert log.returncode == 0 and f"Message: {COMMIT}" in log.stdout
    bad = run("git bad")
    assert bad.returncode == 2 and '"repo_path" is a required property' in bad.stderr
    assert "parameters: repo_path (string, required)" in bad.stderr


def test_time(run):
    now = run("time now")
    assert now.returncode == 0 and lines(now.stdout)[0].startswith('{"timezone":"UTC","datetime":"')
    bad = run("time bad")  # the server's own error: the tool failed, exit 1, its words on stderr
    assert bad.returncode == 1 and "Invalid timezone" in bad.stderr and "Nowhere/Nope" in bad.stderr


def test_fetch_reads_a_loopback_page_without_robots_txt_and_with_its_user_agent(run, lane):
    fetched = run("fetch")
    assert fetched.returncode == 0 and PAGE_TEXT in fetched.stdout
    prompt = run("fetch prompt")
    assert prompt.returncode == 0 and PAGE_TEXT in prompt.stdout
    assert lane.requests(FETCH_AGENT) == ["/page.html", "/page.html"]  # --ignore-robots-txt: no robots.txt


def test_fetch_honours_robots_txt_offline(run, lane):
    refused = run("fetch robots")
    assert refused.returncode == 1 and "robots.txt" in refused.stderr
    assert lane.requests(ROBOTS_AGENT) == ["/robots.txt"]


# --- every server at once ------------------------------------------------------------------------


def test_prompts_of_every_server(run):
    listed = run("all prompts")
    assert listed.returncode == 0, listed.stderr
    assert "everything:\n- simple-prompt(): A prompt with no arguments\n" in listed.stdout
    assert "fetch:\n- fetch(url): " in listed.stdout and "fs: no prompts (the server offers none)\n" in listed.stdout
