"""The LangChain host with real langchain-core: `ChatClaudeCode` drives the real `claude` CLI
against the fake Anthropic API on 127.0.0.1 (sync and async, plain and streamed, tools,
structured output, images, errors, cancellation). After each test no `claude` and no
private file is left.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import TypedDict

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.exceptions import ModelAuthenticationError, ModelRateLimitError, OutputParserException
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from pydantic import BaseModel

from claude_transport_support import FAKES, live_processes_mentioning
from hostlink.adapters.langchain import ChatClaudeCode, ClaudeCodeError, ClaudeQuotaExceededError
from hostlink.claude_code import metrics
from hostlink.claude_code.process import ClaudeTransportOptions

sys.path.insert(0, str(FAKES))
import fake_anthropic as fa

from peers import CLAUDE, requires_claude

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGA"
                        "hKmMIQAAAABJRU5ErkJggg==")
PNG_B64 = base64.b64encode(PNG).decode()


@pytest.fixture(autouse=True)
def nothing_left(runtime_dir):
    """No claude left, and (runtime_dir checks it) no private file but the doctor's
    last-request facts, which are kept on purpose."""
    yield
    assert live_processes_mentioning(str(runtime_dir)) == []
    (runtime_dir / metrics.FILE_NAME).unlink(missing_ok=True)


def environ(home: Path) -> dict[str, str]:
    return {"HOME": str(home), "PATH": f"{Path(CLAUDE).parent}{os.pathsep}{os.environ['PATH']}"}


def offered(request: dict) -> list[str]:
    """The proposal tools the CLI sent (it may add a placeholder of its own)."""
    return [tool["name"] for tool in request.get("tools", []) if tool["name"].startswith("mcp__")]


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


class City(BaseModel):
    """A city and its population."""

    name: str
    population: int


# --- without the claude CLI ------------------------------------------------------------------


def test_the_model_names_what_it_cannot_take():
    with pytest.raises(ValueError, match="use one of"):
        ChatClaudeCode(model="gpt-5")
    with pytest.raises(ValueError, match="extra_usage"):
        ChatClaudeCode(extra_usage="sometimes")
    assert ChatClaudeCode(model="claude-code/claude-opus-4-1-20250805").model  # a family's id is taken
    model = ChatClaudeCode()
    with pytest.raises(ValueError, match="'nowhere' is neither auto"):
        model.bind_tools([weather], tool_choice="nowhere")
    with pytest.raises(ValueError, match="method"):
        model.with_structured_output(City, method="xml")


def test_messages_take_data_images_and_name_what_they_cannot_take():
    from hostlink.adapters.langchain.messages import context_of

    forms = [{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}"}},
             {"type": "image", "base64": PNG_B64, "mime_type": "image/png"},
             {"type": "image", "source_type": "base64", "data": PNG_B64, "mime_type": "image/png"},
             {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}}]
    (message,) = context_of([HumanMessage(content=[{"type": "text", "text": "look"}, *forms])]).messages
    assert [part.type for part in message.content] == ["text", "image", "image", "image", "image"]
    with pytest.raises(ValueError, match="not as a web URL"):
        context_of([HumanMessage(content=[{"type": "image_url", "image_url": {"url": "https://example.invalid/a.png"}}])])
    with pytest.raises(ValueError, match="'audio' block"):
        context_of([HumanMessage(content=[{"type": "audio", "base64": "AAAA", "mime_type": "audio/wav"}])])
    with pytest.raises(ValueError, match="image/tiff"):
        context_of([HumanMessage(content=[{"type": "image", "base64": PNG_B64, "mime_type": "image/tiff"}])])


def test_a_conversation_reaches_claude_as_the_host_messages_in_order():
    from langchain_core.messages import ChatMessage

    from hostlink.adapters.langchain.messages import context_of
    from hostlink.host import AssistantMessage, TextContent, ThinkingContent, ToolCall, ToolResultMessage, UserMessage

    context = context_of([
        SystemMessage(content="Be brief."), SystemMessage(content=[{"type": "text", "text": "Use tools."}, " Twice."]),
        HumanMessage(content="Hi."), AIMessage(content="Hello."),
        HumanMessage(content=["weather in ", {"type": "text", "text": "Paris?"}]),
        AIMessage(content=[{"type": "thinking", "thinking": "ask the tool"}, "Let me look.",
                           {"type": "tool_use", "id": "call-1", "name": "weather", "input": {"city": "Paris"}}],
                  tool_calls=[{"id": "call-1", "name": "weather", "args": {"city": "Paris"}}]),
        AIMessage(content=""),  # an empty turn says nothing to Claude
        ToolMessage(content="sunny", tool_call_id="call-1"),
        ToolMessage(content="no such tool", tool_call_id="call-9", name="forecast", status="error"),
        AIMessage(content=[{"type": "reasoning", "reasoning": "done"}, {"type": "text", "text": "Sunny."}]),
    ])
    assert context.system_prompt == "Be brief.\n\nUse tools. Twice."
    assert list(context.messages) == [
        UserMessage((TextContent("Hi."),)), AssistantMessage((TextContent("Hello."),)),
        UserMessage((TextContent("weather in "), TextContent("Paris?"))),
        AssistantMessage((ThinkingContent("ask the tool"), TextContent("Let me look."),
                          ToolCall("call-1", "weather", {"city": "Paris"}))),  # the tool_use block only once
        ToolResultMessage("call-1", "weather", (TextContent("sunny"),)),  # named by the call it answers
        ToolResultMessage("call-9", "forecast", (TextContent("no such tool"),), is_error=True),
        AssistantMessage((ThinkingContent("done"), TextContent("Sunny."))),
    ]
    with pytest.raises(ValueError, match="Claude Code takes only text in a system message"):
        context_of([SystemMessage(content=[{"type": "image", "base64": PNG_B64, "mime_type": "image/png"}])])
    with pytest.raises(ValueError, match="Claude Code cannot take a ChatMessage in the messages"):
        context_of([ChatMessage(content="hello", role="critic")])
    with pytest.raises(ValueError, match="an image block without base64 data"):
        context_of([HumanMessage(content=[{"type": "image", "mime_type": "image/png"}])])


def test_an_answer_with_thinking_reaches_langchain_as_reasoning_and_text_blocks():
    from hostlink.adapters.langchain.messages import ai_content
    from hostlink.host import AssistantMessage, TextContent, ThinkingContent, ToolCall

    call = ToolCall("call-1", "weather", {"city": "Paris"})
    assert ai_content(AssistantMessage((TextContent("Sun"), TextContent("ny."), call))) == "Sunny."
    assert ai_content(AssistantMessage((ThinkingContent("look it up"), TextContent("Sunny."), call))) == [
        {"type": "reasoning", "reasoning": "look it up"}, {"type": "text", "text": "Sunny."}]


def test_stop_sequences_beyond_the_bound_or_with_a_structured_answer_are_refused_before_claude(tmp_path):
    model = ChatClaudeCode(cwd=tmp_path, environ={"HOME": str(tmp_path), "PATH": str(tmp_path)})
    with pytest.raises(ValueError, match=r"^stop: at most 16 stop sequences"):
        model.invoke("hello", stop=[f"s{index}" for index in range(17)])
    with pytest.raises(ValueError, match=r"^stop: a stop sequence must not be empty"):
        model.invoke("hello", stop=[""])
    with pytest.raises(ValueError, match=r"^stop: stop sequences cannot cut a structured answer"):
        model.with_structured_output(City).invoke("a city", stop=["END"])


def test_call_options_and_tool_choices_claude_code_cannot_honour_are_refused_naming_them(tmp_path):
    model = ChatClaudeCode(cwd=tmp_path, environ={"HOME": str(tmp_path), "PATH": str(tmp_path)})
    with pytest.raises(ValueError, match=r"^Claude Code takes no frequency_penalty, seed \(call options it would"):
        model.invoke("hello", seed=1, frequency_penalty=0.5)
    with pytest.raises(ValueError, match=r"^with_structured_output takes no tools$"):
        model.with_structured_output(City, tools=[weather])
    for choice in (True, False, "required", {"type": "function", "function": {"name": "weather"}},
                   {"type": "tool", "name": "weather"}, {"type": "any"}):
        model.bind_tools([weather], tool_choice=choice)  # each of LangChain's forms is taken
    for choice, named in [({"type": "function", "function": {"name": "forecast"}}, "forecast"),
                          ({"type": "tool", "name": "forecast"}, "forecast"), ({"type": "web_search"}, "web_search")]:
        with pytest.raises(ValueError, match=f"^tool_choice: '{named}' is neither auto, none, any nor a bound tool"):
            model.bind_tools([weather], tool_choice=choice)


def test_without_the_claude_cli_the_error_says_how_to_install_it(tmp_path, runtime_dir):
    model = ChatClaudeCode(cwd=tmp_path, environ={"HOME": str(tmp_path), "PATH": str(tmp_path)})
    with pytest.raises(ClaudeCodeError, match="npm install -g @anthropic-ai/claude-code") as raised:
        model.invoke("hello")
    assert raised.value.code == "unavailable"


def test_importing_the_adapter_loads_neither_the_mcp_sdk_nor_the_provider():
    """Only the model table of the provider (its names); the provider itself at the first request."""
    code = ("import sys, hostlink.adapters.langchain; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'jsonschema_rs') "
            "or m.startswith(('hostlink.claude_code.', 'hostlink.mcp'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['hostlink.claude_code.models']"


def test_a_notice_outside_a_request_is_logged_and_kept_with_none(caplog):
    from hostlink.adapters.notices import REQUEST_NOTICES, KeptNotices

    notifier = KeptNotices("hostlink.claude_code")
    notifier.notify("a prewarmed claude was not stopped cleanly", "warning")
    kept: list[str] = []
    token = REQUEST_NOTICES.set(kept)
    try:
        notifier.notify("the plan is 90% used", "warning")
    finally:
        REQUEST_NOTICES.reset(token)
    assert kept == ["the plan is 90% used"]
    assert [(record.name, record.levelname, record.getMessage()) for record in caplog.records] == [
        ("hostlink.claude_code", "WARNING", "a prewarmed claude was not stopped cleanly"),
        ("hostlink.claude_code", "WARNING", "the plan is 90% used")]


# --- over a scripted claude-code provider (conftest's scripted_conversations) ------------------


def _done(text: str):
    from hostlink.host import AssistantMessage, Done, TextContent

    return Done(AssistantMessage((TextContent(text),)))


def _quota_error(text: str = "usage limit reached"):
    from hostlink.host import ErrorEvent

    return ErrorEvent(text, code="quota_exceeded")


def test_a_failure_mid_stream_raises_the_model_error_after_the_text_so_far(scripted_conversations, tmp_path):
    from hostlink.host import TextDelta

    scripted_conversations.extend([[TextDelta("the start"), _quota_error()],
                                   [TextDelta("async start"), _quota_error()]])
    model = ChatClaudeCode(cwd=tmp_path)
    chunks = model.stream("hi")
    assert next(chunks).text == "the start"
    with pytest.raises(ClaudeQuotaExceededError, match="usage limit reached"):
        next(chunks)

    async def astream() -> None:
        chunks = model.astream("hi")
        assert (await anext(chunks)).text == "async start"
        with pytest.raises(ClaudeQuotaExceededError, match="usage limit reached"):
            await anext(chunks)

    asyncio.run(astream())
    model.close()


def test_a_provider_that_ends_without_an_answer_is_an_error_not_an_empty_reply(scripted_conversations, tmp_path):
    from hostlink.host import TextDelta

    scripted_conversations.append([TextDelta("cut off")])
    model = ChatClaudeCode(cwd=tmp_path)
    with pytest.raises(RuntimeError, match="ended without an answer"):
        model.invoke("hi")
    model.close()


def test_the_v3_event_streams_carry_the_tokens_to_the_callbacks(scripted_conversations, tmp_path):
    """LangChain's v3 streams (beta) leave the tokens to the model: sync and async, callbacks get them."""
    from langchain_core._api import LangChainBetaWarning

    from hostlink.host import TextDelta

    for _ in range(2):
        scripted_conversations.append([TextDelta("sun"), TextDelta("ny"), _done("sunny")])
    model, handler = ChatClaudeCode(cwd=tmp_path), _Tokens()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LangChainBetaWarning)  # when this langchain-core says so
        stream = model.stream_events("weather?", {"callbacks": [handler]}, version="v3")
        assert stream.output.text == "sunny" and handler.tokens == ["sun", "ny"]

        async def astream() -> str:
            stream = await model.astream_events("weather?", {"callbacks": [handler]}, version="v3")
            return (await stream).text

        handler.tokens.clear()
        assert asyncio.run(astream()) == "sunny" and handler.tokens == ["sun", "ny"]
    model.close()


# --- with the real claude CLI ----------------------------------------------------------------


@pytest.mark.slow
@requires_claude
def test_invoke_a_plain_answer_with_usage_and_stop_reason(chat, api):
    api.push(fa.text("hello from Claude", input_tokens=20, output_tokens=5, cache_read_input_tokens=3))
    answer = chat.invoke([SystemMessage("Be brief."), HumanMessage("say hello")])
    assert isinstance(answer, AIMessage) and answer.content == "hello from Claude"
    assert answer.usage_metadata["input_tokens"] == 23 and answer.usage_metadata["output_tokens"] == 5
    assert answer.usage_metadata["input_token_details"]["cache_read"] == 3
    assert answer.response_metadata["stop_reason"] == "stop"
    assert answer.response_metadata["model_provider"] == "claude-code" and answer.response_metadata["notices"] == []
    (request,) = api.messages_requests()
    assert "Be brief." in json.dumps(request["system"])


@pytest.mark.slow
@requires_claude
def test_stream_in_pieces_with_thinking_and_the_usage_last(chat, api):
    api.push(fa.Reply((fa.Thinking("let me think"), fa.Text("streamed in pieces")), chunk=4))
    chunks = list(chat.stream("stream please"))
    assert "".join(chunk.text for chunk in chunks) == "streamed in pieces" and len(chunks) > 3
    whole = chunks[0]
    for chunk in chunks[1:]:
        whole += chunk
    assert whole.additional_kwargs["reasoning_content"] == "let me think"
    assert whole.usage_metadata["output_tokens"] == 7 and whole.response_metadata["stop_reason"] == "stop"


@pytest.mark.slow
@requires_claude
@pytest.mark.anyio
async def test_ainvoke_and_astream(chat, api):
    api.push(fa.text("async hello"), fa.Reply((fa.Text("async stream"),), chunk=3))
    assert (await chat.ainvoke("hello")).content == "async hello"
    pieces = [chunk.text async for chunk in chat.astream("stream")]
    assert "".join(pieces) == "async stream" and len(pieces) > 2


@pytest.mark.slow
@requires_claude
def test_stop_cuts_the_answer_where_a_sequence_first_completes_whole_and_streamed(chat, api, runtime_dir):
    said = "Thought: look it up.\nObservation: invented\nmore"
    api.push(fa.Reply((fa.Text(said), fa.ToolUse("mcp__hostlink__weather", {"city": "Oslo"})), chunk=4,
                      stop_reason="tool_use"))
    answer = chat.bind_tools([weather]).invoke("weather?", stop=["Observation:", "never"])
    assert answer.content == "Thought: look it up.\n" and answer.tool_calls == []  # proposed after the cut: not sent
    assert live_processes_mentioning(str(runtime_dir)) == []  # no claude waits for tool results that never come
    assert answer.response_metadata["stop_reason"] == "stop"
    assert answer.response_metadata["stop_sequence"] == "Observation:"
    api.push(fa.Reply((fa.Text(said),), chunk=4))  # the sequence arrives split over three deltas
    chunks = list(chat.stream("again", stop=["Observation:"]))
    assert "".join(chunk.text for chunk in chunks) == "Thought: look it up.\n"
    assert chunks[-1].response_metadata["stop_sequence"] == "Observation:"


class _Tokens(BaseCallbackHandler):
    def __init__(self) -> None:
        self.tokens: list[str] = []

    def on_llm_new_token(self, token: str, **kwargs) -> None:
        self.tokens.append(token)


@pytest.mark.slow
@requires_claude
@pytest.mark.anyio
async def test_streams_with_callbacks_carry_the_tokens_and_the_tool_call(chat, api):
    api.push(fa.Reply((fa.Text("checking"), fa.ToolUse("mcp__hostlink__weather", {"city": "Oslo"})), chunk=3,
                      stop_reason="tool_use"),
             fa.Reply((fa.Text("sync tokens"),), chunk=3))  # fmt: skip
    handler = _Tokens()
    chunks = [chunk async for chunk in chat.bind_tools([weather]).astream("weather?", {"callbacks": [handler]})]
    whole = chunks[0]
    for chunk in chunks[1:]:
        whole += chunk
    assert whole.text == "checking" and "".join(handler.tokens) == "checking"
    assert [(call["name"], call["args"]) for call in whole.tool_calls] == [("weather", {"city": "Oslo"})]
    handler.tokens.clear()
    streamed = [chunk.text for chunk in chat.stream("tokens?", {"callbacks": [handler]})]
    assert "".join(streamed) == "sync tokens" == "".join(handler.tokens)


@pytest.mark.slow
@requires_claude
def test_bind_tools_takes_langchain_tools_pydantic_models_and_dicts(chat, api):
    word = {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}
    lookup = {"type": "function", "function": {"name": "lookup", "description": "Look a word up.", "parameters": word}}
    api.push(fa.tool_use("mcp__hostlink__weather", {"city": "Paris"}))
    answer = chat.bind_tools([weather, City, lookup]).invoke("weather in Paris?")
    assert answer.tool_calls == [{"type": "tool_call", "id": answer.tool_calls[0]["id"], "name": "weather",
                                  "args": {"city": "Paris"}}]
    assert answer.response_metadata["stop_reason"] == "toolUse"
    (request,) = api.messages_requests()
    assert sorted(offered(request)) == ["mcp__hostlink__City", "mcp__hostlink__lookup", "mcp__hostlink__weather"]


@pytest.mark.slow
@requires_claude
def test_tool_choice_by_name_offers_that_tool_and_none_offers_none(chat, api):
    api.push(fa.tool_use("mcp__hostlink__weather", {"city": "Oslo"}), fa.text("no tools"))
    chat.bind_tools([weather, City], tool_choice="weather").invoke("go")
    assert chat.bind_tools([weather], tool_choice="none").invoke("go").content == "no tools"
    named, none = api.messages_requests()
    assert offered(named) == ["mcp__hostlink__weather"] and "must call the tool weather" in json.dumps(named["system"])
    assert offered(none) == []


@pytest.mark.slow
@requires_claude
def test_a_tool_loop_of_three_rounds(chat, api):
    """Claude proposes, LangChain runs the tool and sends its result back, three times."""
    api.push(fa.tool_use("mcp__hostlink__weather", {"city": "Paris"}),
             fa.tool_use("mcp__hostlink__weather", {"city": "Oslo"}),
             fa.tool_use("mcp__hostlink__weather", {"city": "Rome"}),
             fa.text("Sunny everywhere."))
    model = chat.bind_tools([weather])
    messages: list = [HumanMessage("weather in Paris, Oslo and Rome?")]
    while (answer := model.invoke(messages)).tool_calls:
        messages.append(answer)
        messages += [ToolMessage(weather.invoke(call["args"]), tool_call_id=call["id"]) for call in answer.tool_calls]
    assert answer.content == "Sunny everywhere." and len(messages) == 7
    last = json.dumps(api.messages_requests()[-1]["messages"])
    assert all(f"sunny in {city}" in last for city in ("Paris", "Oslo", "Rome"))


@pytest.mark.slow
@requires_claude
def test_structured_output_with_a_pydantic_model_and_a_schema(chat, api):
    api.push(fa.tool_use("mcp__hostlink__City", {"name": "Paris", "population": 2100000}))
    assert chat.with_structured_output(City).invoke("the biggest French city") == City(name="Paris",
                                                                                       population=2100000)
    (request,) = api.messages_requests()
    assert offered(request) == ["mcp__hostlink__City"] and "must call the tool City" in json.dumps(request["system"])

    schema = {"title": "Town", "description": "A town.", "type": "object",
              "properties": {"name": {"type": "string"}, "population": {"type": "integer"}},
              "required": ["name", "population"]}
    api.push(fa.tool_use("mcp__hostlink__Town", {"name": "Lyon", "population": 520000}),
             fa.tool_use("mcp__hostlink__Town", {"name": "Lyon"}))
    structured = chat.with_structured_output(schema, method="json_schema")
    assert structured.invoke("a French town") == {"name": "Lyon", "population": 520000}
    with pytest.raises(OutputParserException, match="does not match the schema"):
        structured.invoke("a French town")


class Pair(TypedDict):
    left: str
    right: str


@pytest.mark.slow
@requires_claude
def test_structured_output_with_include_raw_keeps_the_message(chat, api):
    api.push(fa.tool_use("mcp__hostlink__Pair", {"left": "a", "right": "b"}))
    result = chat.with_structured_output(Pair, include_raw=True).invoke("a pair")
    assert result["parsed"] == {"left": "a", "right": "b"} and result["parsing_error"] is None
    assert isinstance(result["raw"], AIMessage) and result["raw"].tool_calls[0]["name"] == "Pair"


@pytest.mark.slow
@requires_claude
def test_an_image_in(chat, api):
    api.push(fa.text("a tiny image"))
    message = HumanMessage(content=[{"type": "text", "text": "what is this?"},
                                    {"type": "image", "base64": PNG_B64, "mime_type": "image/png"}])
    assert chat.invoke([message]).content == "a tiny image"
    (request,) = api.messages_requests()
    images = [block for item in request["messages"] if isinstance(item["content"], list)
              for block in item["content"] if block.get("type") == "image"]
    assert [base64.b64decode(block["source"]["data"]) for block in images] == [PNG]


@pytest.mark.slow
@requires_claude
def test_provider_failures_are_langchain_model_errors_with_the_providers_message(chat, api):
    api.push(fa.usage_limit())  # resets an hour from now
    with pytest.raises(ModelRateLimitError) as raised:
        chat.invoke("hello")
    assert isinstance(raised.value, ClaudeQuotaExceededError) and not raised.value.is_retryable
    assert "usage limit" in str(raised.value) and 3500 < raised.value.retry_after <= 3600
    api.push(fa.HttpError(401, "authentication_error", "invalid x-api-key"))
    with pytest.raises(ModelAuthenticationError):
        chat.invoke("hello")


@pytest.mark.slow
@requires_claude
def test_plan_notices_come_with_the_answer(api, home, runtime_dir):
    """Signed in as a subscription, an answer drawn from extra usage carries the warning."""
    options = ClaudeTransportOptions(test_api_base_url=api.base_url, test_oauth_token="sk-ant-oat01-fake-test")
    chat = ChatClaudeCode(model="sonnet", cwd=home, environ=environ(home), options=options, extra_usage="warn")
    api.headers = fa.drawing_extra_usage()
    answer = chat.invoke("hello")
    assert answer.content == "default answer"
    assert any("extra usage" in notice for notice in answer.response_metadata["notices"])


@pytest.mark.slow
@requires_claude
def test_the_extra_usage_guard_refuses_before_any_claude_starts(api, home, runtime_dir):
    options = ClaudeTransportOptions(test_api_base_url=api.base_url, test_oauth_token="sk-ant-oat01-fake-test")
    chat = ChatClaudeCode(model="sonnet", cwd=home, environ=environ(home), options=options, extra_usage="refuse")
    api.headers = fa.drawing_extra_usage()
    assert chat.invoke("hello").content == "default answer"
    sent = len(api.messages_requests())
    with pytest.raises(ClaudeQuotaExceededError, match="extra usage is refused") as refused:
        chat.invoke("hello again")
    assert refused.value.retry_after > 3000 and len(api.messages_requests()) == sent


@pytest.mark.slow
@requires_claude
@pytest.mark.anyio
async def test_cancelling_the_task_stops_claude(chat, api, runtime_dir):
    api.push(fa.Reply((fa.Text("the start of a long answer"),), delay_before_delta=30))
    started = asyncio.Event()

    async def run() -> None:
        async for _ in chat.astream("a long one"):
            started.set()

    task = asyncio.create_task(run())
    await asyncio.wait_for(started.wait(), 60)
    assert live_processes_mentioning(str(runtime_dir))  # claude is running
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert live_processes_mentioning(str(runtime_dir)) == []


@pytest.mark.slow
@requires_claude
def test_leaving_a_sync_stream_early_stops_claude(chat, api, runtime_dir):
    api.push(fa.Reply((fa.Text("the start of a long answer"),), chunk=4, delay_before_delta=30))
    stream = chat.stream("a long one")
    assert next(stream).text
    assert live_processes_mentioning(str(runtime_dir))
    stream.close()
    assert live_processes_mentioning(str(runtime_dir)) == []
