"""MCP sampling through the host's own models, against a fixture server whose `sample` tool
asks for a model answer: off unless configured, each request approved by the person first
(refused where nobody can be asked), the configured model with no tools, the answer bounded.
A scripted provider stands in for a model where the test is about the plumbing; the last
test runs the real Claude Code provider (the real `claude` CLI against the fake API).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from claude_transport_support import FAKES, live_processes_mentioning
from host_support import Notices
from hostlink.host import (
    Answer,
    AssistantMessage,
    CancelSignal,
    Done,
    ModelSpec,
    ProviderSpec,
    Question,
    Registry,
    TextContent,
)
from hostlink.host.session import HostSession
from hostlink.mcp.config.schema import SamplingSettings, StdioServer
from hostlink.mcp.extension import McpExtension
from mcp_runtime_support import FIXTURE
from peers import CLAUDE, requires_claude

sys.path.insert(0, str(FAKES))
import fake_anthropic as fa

ASKER = str(Path(FIXTURE).with_name("mcp_asking_server.py"))


class Scripted:
    """A provider `fake` with one model `echo`: answers `reply` and keeps each context."""

    def __init__(self, reply: str = "a short answer") -> None:
        self.reply, self.contexts = reply, []

    def register(self, registry: Registry) -> None:
        registry.register_provider(ProviderSpec("fake", [ModelSpec("echo", "Echo")], self._stream))

    async def _stream(self, model, context, signal):
        self.contexts.append(context)
        yield Done(AssistantMessage((TextContent(self.reply),), model=model.id))



async def sample_through_a_host(extensions, arguments: dict, ask, sampling: dict | None,
                                protocol: str = "auto") -> dict:
    settings = SamplingSettings(**sampling) if sampling else None
    server = StdioServer(command=sys.executable, args=[ASKER], sampling=settings, protocol_version=protocol)
    host = HostSession([McpExtension(servers={"asker": server}), *extensions])
    await host.start(cwd=Path.cwd(), project_trusted=False, notifier=Notices(), ask=ask)
    try:
        result = await host.run_tool("mcp", {"action": "call", "server": "asker", "tool": "sample", "args": arguments},
                                     CancelSignal())
    finally:
        await host.shutdown()
    if result.is_error:  # on 2026-07-28 a refused input request fails the server's call itself
        return {"error": result.content[0].text}
    return json.loads(result.content[0].text)


def approving(asked: list[Question], action: str = "accept"):
    async def ask(question: Question) -> Answer:
        asked.append(question)
        return Answer(action, {})

    return ask


@pytest.mark.anyio
@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_an_approved_request_is_answered_by_the_configured_model_without_tools(protocol):
    provider, asked = Scripted(), []
    said = await sample_through_a_host([provider], {"prompt": "What is 2+2?"}, approving(asked),
                                       {"model": "fake/echo", "maxTokens": 50}, protocol)
    assert said == {"text": "a short answer", "model": "fake/echo", "stop": "endTurn"}
    (context,) = provider.contexts
    assert context.system_prompt == "Answer briefly." and context.tools == ()  # the escape is gone
    assert context.messages[0].content[0].text == "What is 2+2?"
    (question,) = asked
    assert question.asker == "asker"
    assert "wants fake/echo to answer this (at most 50 tokens, no tools)" in question.message
    assert "[user] What is 2+2?" in question.message


@pytest.mark.anyio
async def test_the_answer_is_cut_to_the_smaller_token_bound():
    said = await sample_through_a_host([Scripted("x" * 500)], {"prompt": "long", "max_tokens": 5}, approving([]),
                                       {"model": "fake/echo", "maxTokens": 50})
    assert said == {"text": "x" * 20, "model": "fake/echo", "stop": "maxTokens"}


@pytest.mark.anyio
async def test_a_request_the_person_declines_never_reaches_the_model():
    provider = Scripted()
    said = await sample_through_a_host([provider], {"prompt": "hi"}, approving([], "decline"),
                                       {"model": "fake/echo"})
    assert "did not approve" in said["error"] and provider.contexts == []


@pytest.mark.anyio
async def test_a_request_with_tools_is_refused_without_asking():
    provider, asked = Scripted(), []
    said = await sample_through_a_host([provider], {"prompt": "hi", "tools": True}, approving(asked),
                                       {"model": "fake/echo"})
    assert "tools" in said["error"] and asked == [] and provider.contexts == []


@pytest.mark.anyio
@pytest.mark.parametrize(("configured", "can_ask"), [(False, True), (True, False)])
async def test_off_unless_configured_and_someone_can_approve(configured, can_ask):
    provider = Scripted()
    said = await sample_through_a_host([provider], {"prompt": "hi"}, approving([]) if can_ask else None,
                                       {"model": "fake/echo"} if configured else None)
    assert "error" in said and provider.contexts == []  # the capability was never advertised


@pytest.mark.anyio
async def test_an_unknown_model_fails_the_request_with_its_name():
    said = await sample_through_a_host([Scripted()], {"prompt": "hi"}, approving([]), {"model": "fake/nosuch"})
    assert "no model 'fake/nosuch'" in said["error"]


@pytest.mark.slow
@requires_claude
@pytest.mark.anyio
async def test_the_claude_code_provider_answers_a_servers_request(tmp_path, runtime_dir):
    from hostlink.claude_code import metrics
    from hostlink.claude_code.extension import ClaudeCodeExtension
    from hostlink.claude_code.process import ClaudeTransportOptions

    home = tmp_path / "home"
    home.mkdir()
    with fa.FakeAnthropic(fa.text("four")) as api:
        claude = ClaudeCodeExtension(
            options=ClaudeTransportOptions(test_api_base_url=api.base_url, test_api_key="sk-fake-test"),
            environ={"HOME": str(home), "PATH": f"{Path(CLAUDE).parent}{os.pathsep}{os.environ['PATH']}"})
        said = await sample_through_a_host([claude], {"prompt": "What is 2+2?"}, approving([]),
                                           {"model": "claude-code/haiku", "maxTokens": 20})
        assert said == {"text": "four", "model": "claude-code/haiku", "stop": "endTurn"}
        (request,) = api.messages_requests()
        assert "What is 2+2?" in json.dumps(request["messages"]) and "Answer briefly." in json.dumps(request["system"])
    assert live_processes_mentioning(str(runtime_dir)) == []
    (runtime_dir / metrics.FILE_NAME).unlink(missing_ok=True)


def test_on_a_terminal_the_request_is_shown_and_a_no_refuses_it(tmp_path):
    from mcp_cli_support import configure
    from terminal_support import typed

    env = configure(tmp_path, {"asker": {"command": sys.executable, "args": [ASKER],
                                         "sampling": {"model": "claude-code/haiku", "maxTokens": 30}}})
    code, out, shown = typed(env, tmp_path, [b"n\n"], "mcp", "call", "asker", "sample", '{"prompt": "hi there"}')
    assert "MCP server 'asker' asks" in shown and "wants claude-code/haiku to answer this (at most 30 tokens" in shown
    assert "[user] hi there" in shown and "\x1b[2J" not in shown
    assert "did not approve" in out + shown and code != 0
