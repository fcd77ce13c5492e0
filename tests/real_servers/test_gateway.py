"""Each real server behind `hostlink mcp serve`, driven by the MCP SDK's client over stdio as
an MCP host drives it, in both faces: the one `mcp` tool (proxy) and `<server>__<tool>` tools
(`--expose tools`). Every result is shown once, errors name what to fix, and nothing the
gateway started outlives it.

Both gateways run once for the module, side by side (`faces`), and record every answer; the
tests read the records.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from gateway_support import leftovers, live_mentioning, stdio_gateway
from real_servers_support import COMMIT, HELLO, PAGE_TEXT, PAGE_TITLE, Lane

pytestmark = pytest.mark.real_servers
FACES = ("proxy", "tools")
FEATURES = "demo://resource/static/document/features.md"
STOP_SECONDS = 20


@dataclass
class Answer:
    """What the gateway answered to one request: the text of its content, whether it is an
    error, its content and structured content as sent; or the error it raised."""

    text: str = ""
    is_error: bool = False
    content: list[dict[str, Any]] | None = None
    structured: Any = None
    raised: str | None = None


@dataclass
class Face:
    answers: dict[str, Answer]
    tools: list[str]
    left: list[int]
    private: list[str]
    errlog: str


def calls(lane: Lane, face: str) -> dict[str, tuple[str, str, dict[str, Any]]]:
    """One good call of each server (and a few wrong ones), by name: (server, tool, arguments)."""
    return {
        "fs": ("fs", "read_text_file", {"path": str(lane.root / "fs" / "hello.txt")}),
        "memory": ("memory", "create_entities", {"entities": [
            {"name": f"gateway-{face}", "entityType": "test", "observations": ["seen through the gateway"]}]}),
        "thinking": ("thinking", "sequentialthinking", {
            "thought": "through the gateway", "thoughtNumber": 1, "totalThoughts": 1, "nextThoughtNeeded": False}),
        "everything": ("everything", "echo", {"message": f"hello {face}"}),
        "everything-http": ("everything-http", "echo", {"message": f"hello {face} over http"}),
        "playwright": ("playwright", "browser_navigate", {"url": lane.page}),
        "git": ("git", "git_log", {"repo_path": str(lane.root / "repo")}),
        "time": ("time", "get_current_time", {"timezone": "UTC"}),
        "fetch": ("fetch", "fetch", {"url": lane.page}),
        "fs bad": ("fs", "read_text_file", {"path": 5}),
        "git bad": ("git", "git_status", {}),
    }


# what each good call's text holds exactly once
ONCE = {"fs": HELLO.strip(), "memory": "seen through the gateway", "thinking": '"thoughtNumber":1',
        "everything": "Echo: hello", "everything-http": "over http", "playwright": f"Page Title: {PAGE_TITLE}",
        "git": COMMIT, "time": '"timezone":"UTC"', "fetch": PAGE_TEXT}


def _answer(result: Any) -> Answer:
    content = [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content]
    text = "\n".join(block.text for block in result.content if block.type == "text")
    return Answer(text, bool(result.is_error), content, result.structured_content)


async def _asked(answers: dict[str, Answer], name: str, ask: Callable[[], Awaitable[Any]],
                 shape: Callable[[Any], Answer] = _answer) -> None:
    try:
        answers[name] = shape(await ask())
    except Exception as error:  # noqa: BLE001 - a refusal is an answer to record
        answers[name] = Answer(raised=str(error))


def _prompt_text(result: Any) -> Answer:
    return Answer("\n".join(f"{m.role}: {m.content.text}" for m in result.messages if m.content.type == "text"))


def _read_text(result: Any) -> Answer:
    return Answer("\n".join(getattr(item, "text", "") for item in result.contents))


async def _proxy(client: Any, lane: Lane, answers: dict[str, Answer]) -> None:
    async def action(name: str, **args: Any) -> None:
        await _asked(answers, name, lambda: client.call_tool("mcp", args))

    for name, (server, tool, args) in calls(lane, "proxy").items():
        await action(name, action="call", server=server, tool=tool, args=args)
    await action("resources", action="resources", server="everything")
    await action("read", action="read", server="everything", uri=FEATURES)
    await action("prompts", action="prompts", server="everything")
    await action("prompt", action="prompt", server="everything", prompt="args-prompt", args={"city": "Paris"})


async def _tools(client: Any, lane: Lane, answers: dict[str, Answer]) -> list[str]:
    # first of all, before any listing: a prompt, as an MCP host may ask for one it remembers
    await _asked(answers, "fresh prompt", lambda: client.get_prompt("everything__simple-prompt"), _prompt_text)
    listed = [tool.name for tool in (await client.list_tools()).tools]
    for name, (server, tool, args) in calls(lane, "tools").items():
        await _asked(answers, name, lambda server=server, tool=tool, args=args: client.call_tool(f"{server}__{tool}",
                                                                                                args))
    await _asked(answers, "resources", client.list_resources,
                 lambda result: Answer("\n".join(str(resource.uri) for resource in result.resources)))
    await _asked(answers, "read", lambda: client.read_resource(f"hostlink://everything/{FEATURES}"), _read_text)
    await _asked(answers, "prompts", client.list_prompts,
                 lambda result: Answer("\n".join(prompt.name for prompt in result.prompts)))
    await _asked(answers, "prompt", lambda: client.get_prompt("everything__args-prompt", {"city": "Paris"}),
                 _prompt_text)
    return listed


async def _stopped(where: Path) -> list[int]:
    """What the gateway in `where` started and is still running, given the time to stop: the
    SDK client kills the gateway 4 s after closing its stdin (2 s grace, SIGTERM, 2 s), and on
    a loaded machine a server it was still stopping then ends on its own stdin's end soon after."""
    deadline = anyio.current_time() + STOP_SECONDS
    while (left := live_mentioning(str(where))) and anyio.current_time() < deadline:
        await anyio.sleep(0.2)
    return left


@pytest.fixture(scope="module")
def faces(lane: Lane) -> dict[str, Face]:
    """Both gateways, each over every server (a memory file of its own), run side by side."""
    recorded: dict[str, Face] = {}

    async def run(face: str) -> None:
        where = lane.root / f"gateway-{face}"
        where.mkdir()
        servers = json.loads(json.dumps(lane.servers))
        servers["memory"]["env"]["MEMORY_FILE_PATH"] = str(where / "memory.jsonl")
        answers: dict[str, Answer] = {}
        errlog = where / "gateway.err"
        with errlog.open("w") as sink:
            async with stdio_gateway(where, servers, *(["--expose", "tools"] if face == "tools" else []),
                                     errlog=sink) as client:
                tools = await _tools(client, lane, answers) if face == "tools" else []
                if face == "proxy":
                    await _proxy(client, lane, answers)
        left = await _stopped(where)
        recorded[face] = Face(answers, tools, left, leftovers(where), errlog.read_text())

    async def both() -> None:
        async with anyio.create_task_group() as group:
            for face in FACES:
                group.start_soon(run, face)

    anyio.run(both)
    return recorded


@pytest.mark.parametrize(("face", "server"), [(face, server) for face in FACES for server in ONCE])
def test_each_result_is_shown_once(faces, face, server):
    answer = faces[face].answers[server]
    assert answer.raised is None and not answer.is_error, answer
    # the tools face passes the server's own text through (thinking and time indent their JSON)
    assert "".join(answer.text.split()).count("".join(ONCE[server].split())) == 1, answer.text


@pytest.mark.parametrize("face", FACES)
def test_nothing_outlives_the_gateway(faces, face):
    assert faces[face].left == [] and faces[face].private == []
    assert "Traceback" not in faces[face].errlog


@pytest.mark.parametrize("face", FACES)
def test_a_wrong_argument_names_the_parameter(faces, face):
    fs, git = faces[face].answers["fs bad"], faces[face].answers["git bad"]
    assert fs.is_error and "at path" in fs.text and "parameters: path (string, required)" in fs.text
    assert git.is_error and '"repo_path" is a required property' in git.text


def test_the_tools_face_names_every_server(faces):
    assert {name.split("__")[0] for name in faces["tools"].tools} == set(ONCE) | {"fetch-robots"}
    assert {"fs__read_text_file", "playwright__browser_navigate", "fetch__fetch",
            "everything-http__echo"} <= set(faces["tools"].tools)


def test_the_tools_face_passes_the_result_through(faces):
    fs = faces["tools"].answers["fs"]
    assert fs.content == [{"type": "text", "text": HELLO}] and fs.structured == {"content": HELLO}


@pytest.mark.parametrize("face", FACES)
def test_resources_and_prompts(faces, face):
    answers = faces[face].answers
    assert FEATURES in answers["resources"].text
    assert "# Everything Server - Features" in answers["read"].text
    assert ("simple-prompt" in answers["prompts"].text) and answers["prompt"].text.endswith(
        "user: What's weather in Paris?")


def test_the_tools_face_gets_a_prompt_before_any_listing(faces):
    fresh = faces["tools"].answers["fresh prompt"]
    assert fresh.raised is None and fresh.text.startswith("user: This is a simple prompt")


def test_fetch_and_playwright_reached_the_loopback_page(faces, lane):
    assert [path for path, _ in lane.seen].count("/page.html") == 4  # fetch and the browser, in each face
