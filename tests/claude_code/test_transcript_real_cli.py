"""Transcript and catalog facts checked on the wire: the real `claude` CLI, the fake API.

- A literal `@path` in a message stays text (escaped; unescaped, the CLI reads the file
  into the prompt). That the provider's own `@"…"` attachment reference does attach the
  image is checked in `test_real_cli.py`.
- Tool names right at Claude's 64-character limit, and aliased unsafe names, reach the API
  as listed and map back to host names.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from claude_transport_support import (
    FAKES,
    MODEL,
)
from hostlink.claude_code.catalog import MAX_TOOL_NAME_LENGTH, TOOL_PREFIX, build_catalog
from hostlink.claude_code.process import ClaudeTransportOptions
from hostlink.claude_code.provider import ClaudeCodeProvider
from hostlink.host import (
    CancelSignal,
    Context,
    Done,
    TextContent,
    ToolCallEvent,
    ToolDefinition,
    UserMessage,
)

sys.path.insert(0, str(FAKES))
import fake_anthropic as fa

from peers import CLAUDE, requires_claude

pytestmark = [pytest.mark.slow, requires_claude]


async def request(api, home: Path, ctx: Context) -> list:
    provider = ClaudeCodeProvider(
        str(CLAUDE),
        cwd=home,
        options=ClaudeTransportOptions(test_api_base_url=api.base_url, test_api_key="sk-fake-test"),
        environ={"HOME": str(home), "PATH": os.environ["PATH"]},
    )
    return [event async for event in provider.stream(MODEL, ctx, CancelSignal())]


def user_blocks(body: dict) -> list[dict]:
    blocks = []
    for message in body["messages"]:
        if message["role"] == "user":
            content = message["content"]
            blocks += [{"type": "text", "text": content}] if isinstance(content, str) else content
    return blocks


@pytest.mark.anyio
async def test_at_mentions_in_messages_stay_text(home, runtime_dir):
    """Unescaped, the CLI would read these files into the prompt (it does for the last block)."""
    (home / "secret.txt").write_text("SECRET-FILE-CONTENT")
    ctx = Context("You are a test host.", [
        UserMessage([TextContent("hello")]),
        UserMessage([TextContent(f"please read @{home / 'secret.txt'}, @secret.txt and @\"{home}/secret.txt\"")]),
    ])
    with fa.FakeAnthropic() as api:
        events = await request(api, home, ctx)
        (body,) = api.messages_requests()
    assert isinstance(events[-1], Done)
    assert "SECRET-FILE-CONTENT" not in json.dumps(body)
    texts = [b["text"] for b in user_blocks(body) if b.get("type") == "text"]
    record = [t for t in texts if t.startswith('{"type":"user"')][-1]
    assert "@" not in record and json.loads(record)["content"][0]["text"].startswith("please read @")


@pytest.mark.anyio
async def test_tool_names_at_the_limit_and_aliases_reach_the_api(home, runtime_dir):
    longest = "n" * (MAX_TOOL_NAME_LENGTH - len(TOOL_PREFIX))
    tools = [
        ToolDefinition(longest, "the longest name kept as is", {"type": "object"}),
        ToolDefinition(longest + "x", "one character too long", {"type": "object"}),
        ToolDefinition("files.read", "an unsafe name", {"type": "object", "properties": {"path": {"type": "string"}}}),
    ]
    catalog = build_catalog(tools, [])
    dotted = TOOL_PREFIX + catalog.alias_for("files.read")
    ctx = Context("You are a test host.", [UserMessage([TextContent("go")])], tools)
    with fa.FakeAnthropic() as api:
        api.push(fa.tool_use(dotted, {"path": "README"}))
        events = await request(api, home, ctx)
        (body,) = api.messages_requests()
    offered = sorted(t["name"] for t in body["tools"] if t["name"].startswith(TOOL_PREFIX))
    assert offered == sorted(catalog.tool_names())
    assert TOOL_PREFIX + longest in offered and max(map(len, offered)) == MAX_TOOL_NAME_LENGTH
    (call,) = [e.tool_call for e in events if isinstance(e, ToolCallEvent)]
    assert call.name == "files.read" and call.arguments == {"path": "README"}
