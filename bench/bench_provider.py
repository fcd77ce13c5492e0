"""The Claude Code provider against its floors, in one run.

- One request's wall time through `ClaudeCodeProvider.stream` (private directory, the
  proposal server, handshake and inventory checks, cleanup) against a bare
  `claude -p --output-format stream-json` run, both on the real CLI against the same local
  fake Anthropic API, with the same allowlisted environment and a throwaway HOME.
- A follow-up request after a tool call against the same bare run: the first request ends
  with a proposal, the host "runs the tool" (a sleep of `TOOL_SECONDS`, as long as a start
  takes, so that the prewarmed child's start is overlapped with it), and only the follow-up
  on the prewarmed child is timed. A second row times a follow-up asked at once (no tool
  time), where the follow-up waits for the prewarmed child's start.
- The proposal server's start alone (start, answer `initialize`, exit at end of input)
  against `python -I -S -c pass`.
- `transcript.serialize` for 10 to 10,000 messages against one `json.dumps` of the same
  records as plain dicts, per message, so linearity shows down the column.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

from bench.common import Row, interleaved, median, private_runtime, run_command

ROOT = Path(__file__).resolve().parent.parent
CLAUDE = ROOT / "node_modules" / ".bin" / "claude"
MODEL = "sonnet"
TOOL_SECONDS = 1.5


def _fake_anthropic():
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from fakes import fake_anthropic
    finally:
        sys.path.remove(str(ROOT / "tests"))
    return fake_anthropic


def conversation(count: int):
    """`count` messages cycling user text, assistant text plus a tool call, tool result."""
    from hostlink.host import AssistantMessage, TextContent, ToolCall, ToolResultMessage, UserMessage

    words = "the quick brown fox jumps over the lazy dog " * 4
    messages = []
    for index in range(count):
        kind = index % 3
        if kind == 0:
            messages.append(UserMessage([TextContent(f"question {index}: {words}")]))
        elif kind == 1:
            messages.append(AssistantMessage(
                content=(TextContent(f"answer {index}: {words}"),
                         ToolCall(id=f"call{index}", name="echo", arguments={"text": words})),
                stop_reason="toolUse"))
        else:
            messages.append(ToolResultMessage(tool_call_id=f"call{index - 1}", tool_name="echo",
                                              content=[TextContent(words)], is_error=False))
    return messages


def plain_records(count: int) -> list[dict]:
    """The records `serialize` writes for `conversation`, as ready-made dicts."""
    words = "the quick brown fox jumps over the lazy dog " * 4
    records = []
    for index in range(count):
        kind = index % 3
        if kind == 0:
            records.append({"type": "user", "content": [{"type": "text", "text": f"question {index}: {words}"}]})
        elif kind == 1:
            records.append({"type": "assistant", "content": [
                {"type": "text", "text": f"answer {index}: {words}"},
                {"type": "toolCall", "id": f"call{index}", "name": "echo", "arguments": {"text": words}}]})
        else:
            records.append({"type": "toolResult", "toolCallId": f"call{index - 1}", "name": "echo",
                            "isError": False, "content": [{"type": "text", "text": words}]})
    return records


def _transcript_rows(quick: bool) -> list[Row]:
    from hostlink.claude_code.catalog import build_catalog
    from hostlink.claude_code.transcript import serialize
    from hostlink.host import Context, ToolDefinition

    tools = [ToolDefinition("echo", "Echo the text back",
                            {"type": "object", "properties": {"text": {"type": "string"}}})]
    rows = []
    for count in (10, 100) if quick else (10, 100, 1_000, 10_000):
        messages = conversation(count)
        records = plain_records(count)
        context = Context("You are a benchmark host.", messages, tools)
        catalog = build_catalog(tools, messages)
        repeats = 1 if quick else max(5, 20_000 // count)
        base, ours = interleaved(
            lambda: json.dumps(records, ensure_ascii=False, separators=(",", ":")),
            lambda: serialize(context, catalog),
            repeats,
        )
        rows.append(Row(f"transcript, {count} messages (per message)", median(base) / count * 1e6,
                        median(ours) / count * 1e6, "us", "linear, <= 2x"))
    return rows


def _proposal_server_rows(quick: bool) -> list[Row]:
    from hostlink.claude_code.process import PROPOSAL_SERVER

    initialize = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
    with tempfile.TemporaryDirectory() as directory:
        catalog = Path(directory, "catalog.json")
        catalog.write_text(json.dumps({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}))
        marker = Path(directory, "violation.json")

        def serve() -> None:
            result = subprocess.run([sys.executable, "-I", "-S", str(PROPOSAL_SERVER), str(catalog), str(marker)],
                                    input=initialize + "\n", capture_output=True, text=True, check=True, timeout=30)
            if '"result"' not in result.stdout:
                raise RuntimeError("the proposal server did not answer initialize")

        base, ours = interleaved(lambda: run_command([sys.executable, "-I", "-S", "-c", "pass"]), serve,
                                 2 if quick else 30)
    return [Row("proposal server start + initialize vs python -I -S -c pass", median(base) * 1000,
                median(ours) * 1000, "ms", "<= 50 ms")]


def _request_rows(quick: bool, follow_ups: bool = True) -> list[Row]:
    """The request row, then (`follow_ups`) the two follow-up rows; the telemetry benchmark needs only
    the first."""
    from hostlink.claude_code.prewarm import Prewarmer
    from hostlink.claude_code.process import ClaudeTransportOptions, child_environment
    from hostlink.claude_code.provider import ClaudeCodeProvider
    from hostlink.host import (
        CancelSignal,
        Context,
        Done,
        ModelSpec,
        TextContent,
        ToolCall,
        ToolDefinition,
        ToolResultMessage,
        UserMessage,
    )

    fake_anthropic = _fake_anthropic()
    tools = [ToolDefinition("echo", "Echo the text back",
                            {"type": "object", "properties": {"text": {"type": "string"}}})]
    context = Context("You are a benchmark host.", [UserMessage([TextContent("hello")])], tools)
    with tempfile.TemporaryDirectory() as home, fake_anthropic.FakeAnthropic(fake_anthropic.text("hi there")) as fake:
        options = ClaudeTransportOptions(test_api_base_url=fake.base_url, test_api_key="sk-ant-bench")
        environ = {"HOME": home, "PATH": os.environ["PATH"]}
        provider = ClaudeCodeProvider(str(CLAUDE), cwd=Path(home), options=options, environ=environ)
        bare_argv = [str(CLAUDE), "-p", "--output-format", "stream-json", "--verbose", "--model", MODEL, "hello"]
        bare_env = child_environment(environ, options, temp_dir=Path(home))  # the CLI litters TMPDIR

        def bare() -> None:
            subprocess.run(bare_argv, env=bare_env, cwd=home, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=True, timeout=120)

        async def one_request() -> None:
            events = [event async for event in provider.stream(ModelSpec(MODEL, MODEL), context, CancelSignal())]
            if not isinstance(events[-1], Done):
                raise RuntimeError(f"provider request failed: {events[-1]}")

        def ours() -> None:
            anyio.run(one_request)

        async def follow_up(tool_seconds: float, sink: list[float]) -> None:
            """A proposal, the tool's run, then the timed follow-up on the prewarmed child."""
            prewarmer = Prewarmer()
            warm = ClaudeCodeProvider(str(CLAUDE), cwd=Path(home), options=options, environ=environ,
                                      prewarmer=prewarmer)  # fmt: skip
            try:
                fake.push(fake_anthropic.tool_use("mcp__hostlink__echo", {"text": "hi"}))
                done = [event async for event in warm.stream(ModelSpec(MODEL, MODEL), context, CancelSignal())][-1]
                if not isinstance(done, Done) or done.message.stop_reason != "toolUse":
                    raise RuntimeError(f"the proposal failed: {done}")
                (call,) = [part for part in done.message.content if isinstance(part, ToolCall)]
                await anyio.sleep(tool_seconds)
                result = ToolResultMessage(tool_call_id=call.id, tool_name="echo", content=[TextContent("hi")])
                second = Context(context.system_prompt, [*context.messages, done.message, result], tools)
                started = time.perf_counter()
                events = [event async for event in warm.stream(ModelSpec(MODEL, MODEL), second, CancelSignal())]
                sink.append(time.perf_counter() - started)
                if not isinstance(events[-1], Done) or warm.start_facts.get("child") != "prewarmed":
                    raise RuntimeError(f"the follow-up did not use the prewarmed child: {events[-1]}")
            finally:
                await prewarmer.aclose()

        if not quick:  # the CLI's first run in a fresh HOME writes its config
            interleaved(bare, ours, 1)
        repeats = 1 if quick else 9
        base, mine = interleaved(bare, ours, repeats)
        rows = [Row("provider request vs bare claude -p (fake API)", median(base) * 1000, median(mine) * 1000, "ms",
                    "none set (~1x)")]
        if not follow_ups:
            return rows
        for tool_seconds, name, goal in ((TOOL_SECONDS, "after a tool call", "<= 0.5x"),
                                         (0.0, "asked at once", "none set")):
            timed: list[float] = []
            base, _ = interleaved(bare, lambda: anyio.run(follow_up, tool_seconds, timed), repeats)
            rows.append(Row(f"follow-up request {name} (prewarmed) vs bare claude -p", median(base) * 1000,
                            median(timed) * 1000, "ms", goal))
    return rows


def run(quick: bool) -> list[Row]:
    with private_runtime():
        rows = _request_rows(quick) if CLAUDE.exists() else []
        return rows + _proposal_server_rows(quick) + _transcript_rows(quick)
