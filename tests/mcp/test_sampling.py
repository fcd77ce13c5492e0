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
from hostlink.mcp.config.schema import HttpServer, SamplingSettings
from hostlink.mcp.extension import McpExtension
from mcp_runtime_support import ASKER, HttpFixture
from peers import CLAUDE, requires_claude

sys.path.insert(0, str(FAKES))
import fake_anthropic as fa


class Scripted:
    """A provider `fake` with one model `echo`: answers `reply` and keeps each context."""

    def __init__(self, reply: str = "a short answer") -> None:
        self.reply, self.contexts = reply, []

    def register(self, registry: Registry) -> None:
        registry.register_provider(ProviderSpec("fake", [ModelSpec("echo", "Echo")], self._stream))

    async def _stream(self, model, context, signal):
        self.contexts.append(context)
        yield Done(AssistantMessage((TextContent(self.reply),), model=model.id))



async def sample_through_a_host(asker: HttpFixture, extensions, arguments: dict, ask, sampling: dict | None,
                                protocol: str = "auto") -> dict:
    settings = SamplingSettings(**sampling) if sampling else None
    server = HttpServer(url=asker.url, sampling=settings, protocol_version=protocol)
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
async def test_an_approved_request_is_answered_by_the_configured_model_without_tools(asker, protocol):
    provider, asked = Scripted(), []
    said = await sample_through_a_host(asker, [provider], {"prompt": "What is 2+2?"}, approving(asked),
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
async def test_the_answer_is_cut_to_the_smaller_token_bound(asker):
    said = await sample_through_a_host(asker, [Scripted("x" * 500)], {"prompt": "long", "max_tokens": 5}, approving([]),
                                       {"model": "fake/echo", "maxTokens": 50})
    assert said == {"text": "x" * 20, "model": "fake/echo", "stop": "maxTokens"}


@pytest.mark.anyio
async def test_a_request_the_person_declines_never_reaches_the_model(asker):
    provider = Scripted()
    said = await sample_through_a_host(asker, [provider], {"prompt": "hi"}, approving([], "decline"),
                                       {"model": "fake/echo"})
    assert "did not approve" in said["error"] and provider.contexts == []


@pytest.mark.anyio
async def test_a_request_with_tools_is_refused_without_asking(asker):
    provider, asked = Scripted(), []
    said = await sample_through_a_host(asker, [provider], {"prompt": "hi", "tools": True}, approving(asked),
                                       {"model": "fake/echo"})
    assert "tools" in said["error"] and asked == [] and provider.contexts == []


@pytest.mark.anyio
@pytest.mark.parametrize(("configured", "can_ask"), [(False, True), (True, False)])
async def test_off_unless_configured_and_someone_can_approve(asker, configured, can_ask):
    provider = Scripted()
    said = await sample_through_a_host(asker, [provider], {"prompt": "hi"}, approving([]) if can_ask else None,
                                       {"model": "fake/echo"} if configured else None)
    assert "error" in said and provider.contexts == []  # the capability was never advertised


@pytest.mark.anyio
async def test_an_unknown_model_fails_the_request_with_its_name(asker):
    said = await sample_through_a_host(asker, [Scripted()], {"prompt": "hi"}, approving([]), {"model": "fake/nosuch"})
    assert "no model 'fake/nosuch'" in said["error"]


@pytest.mark.slow
@requires_claude
@pytest.mark.anyio
async def test_the_claude_code_provider_answers_a_servers_request(asker, tmp_path, runtime_dir):
    from hostlink.claude_code import metrics
    from hostlink.claude_code.extension import ClaudeCodeExtension
    from hostlink.claude_code.process import ClaudeTransportOptions

    home = tmp_path / "home"
    home.mkdir()
    with fa.FakeAnthropic(fa.text("four")) as api:
        claude = ClaudeCodeExtension(
            options=ClaudeTransportOptions(test_api_base_url=api.base_url, test_api_key="sk-fake-test"),
            environ={"HOME": str(home), "PATH": f"{Path(CLAUDE).parent}{os.pathsep}{os.environ['PATH']}"})
        said = await sample_through_a_host(asker, [claude], {"prompt": "What is 2+2?"}, approving([]),
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


# --- in process: the request as the host's model sees it, and what is refused -------------------

PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGA"


def _params(*messages, system=None, max_tokens=50):
    import mcp_types as t

    def block(item):
        if isinstance(item, tuple):
            kind, data, mime = item
            return (t.ImageContent if kind == "image" else t.AudioContent)(type=kind, data=data, mime_type=mime)
        return t.TextContent(type="text", text=item)

    return t.CreateMessageRequestParams(
        messages=[t.SamplingMessage(role=role, content=[block(item) for item in content] if isinstance(content, list)
                                    else block(content)) for role, content in messages],
        system_prompt=system, max_tokens=max_tokens)


def _sampler(provider, asked, notices):
    from hostlink.mcp.runtime.sampling import sampling_for

    async def complete(model, context, signal):  # the host's Complete: a model named "provider/model"
        provider.contexts.append(context)
        yield Done(AssistantMessage((TextContent(provider.reply),), model=model))

    return sampling_for(approving(asked), complete, notices)("asker", SamplingSettings(model="fake/echo", maxTokens=50))


@pytest.mark.anyio
async def test_a_conversation_with_an_image_reaches_the_model_and_the_preview_shows_where_it_was():
    from hostlink.host import ImageContent, UserMessage

    provider, asked, notices = Scripted(), [], Notices()
    result = await _sampler(provider, asked, notices)(None, _params(
        ("user", ["what is this?", ("image", PNG_B64, "image/png")]), ("assistant", "a pixel"),
        ("user", "and its colour? " + "very " * 400), system="Answer \x1b[31mbriefly."))
    assert result.content.text == "a short answer" and result.stop_reason == "endTurn"
    (context,) = provider.contexts
    assert context.system_prompt == "Answer briefly."
    assert context.messages[0] == UserMessage((TextContent("what is this?"), ImageContent(PNG_B64, "image/png")))
    assert context.messages[1] == AssistantMessage((TextContent("a pixel"),))
    (question,) = asked
    lines = question.message.splitlines()
    assert lines[1:5] == ["[system] Answer briefly.", "[user] what is this?", "[user] (an image)",
                          "[assistant] a pixel"]
    assert len(question.message) == 1500 and question.message.endswith("…")  # a long request, cut
    assert notices.seen == []


@pytest.mark.anyio
@pytest.mark.parametrize(("messages", "reason"), [
    ([("user", "hi")] * 101, "more than 100 messages"),
    ([("user", "draw"), ("assistant", [("image", PNG_B64, "image/png")]), ("user", "again")],
     "an image in an assistant message"),
    ([("user", "hi"), ("assistant", "hello")], "the last message must be the user's"),
    ([("user", [("image", "not base64!", "image/png")])], "an image that is not valid base64"),
    ([("user", [("image", PNG_B64, "image/tiff")])], "image content (text and images only)"),
    ([("user", [("audio", "AAAA", "audio/wav")])], "audio content (text and images only)"),
])
async def test_a_request_hostlink_does_not_take_is_refused_with_the_reason_and_never_asked(messages, reason):
    provider, asked, notices = Scripted(), [], Notices()
    result = await _sampler(provider, asked, notices)(None, _params(*messages))
    assert result.message == f"sampling refused: {reason}"
    assert notices.seen == [(f"MCP server 'asker' asked for a model answer hostlink does not give: {reason}",
                             "warning")]
    assert asked == [] and provider.contexts == []
