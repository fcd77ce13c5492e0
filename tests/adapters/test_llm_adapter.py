"""The llm adapter in-process: history conversion, the async->sync bridge, tool loops.

Extensions here are small real `hostlink.host` extensions (a scripted provider, a tool),
driven through llm's own Python API (`model.chain`), so llm's chain loop, tool execution
and history building are the real ones.
"""

from __future__ import annotations

import _thread
import asyncio
import base64
import inspect
import os
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import llm
import pytest
from llm.parts import Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart

from hostlink.adapters.llm.llm_host import LlmHost, ToolError, context_from_prompt
from hostlink.host import (
    AssistantMessage,
    CancelSignal,
    Context,
    Done,
    ErrorEvent,
    ImageContent,
    ModelSpec,
    ProviderSpec,
    Registry,
    Session,
    TextContent,
    TextDelta,
    ThinkingContent,
    ThinkingDelta,
    ToolCall,
    ToolCallEvent,
    ToolResult,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
)

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
ECHO_SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


class Scripted:
    """A provider extension whose replies are async generator functions, one per request."""

    def __init__(self, *replies, unavailable: str | None = None) -> None:
        self.replies = list(replies)
        self.contexts: list[Context] = []
        self.unavailable = unavailable
        self.sessions: list[Session] = []
        self.shutdowns = 0

    def register(self, registry: Registry) -> None:
        async def stream(model: ModelSpec, context: Context, signal: CancelSignal) -> AsyncIterator:
            self.contexts.append(context)
            async for event in self.replies.pop(0)(context, signal):
                yield event

        registry.register_provider(
            ProviderSpec(
                name="scripted",
                models=(ModelSpec("one", "Scripted One", input=("text", "image")), ModelSpec("two", "Scripted Two")),
                stream=stream,
                unavailable=self.unavailable,
            )
        )

        async def start(session: Session) -> None:
            self.sessions.append(session)

        async def shutdown() -> None:
            self.shutdowns += 1

        registry.on_session_start(start)
        registry.on_session_shutdown(shutdown)


class Echo:
    """A tool extension: `echo` returns its text, `fails` an error, `picture` an image."""

    def __init__(self) -> None:
        self.calls: list[dict] = []

    def register(self, registry: Registry) -> None:
        async def echo(args, signal):
            self.calls.append(dict(args))
            return ToolResult([TextContent(f"echo: {args['text']}")])

        async def fails(args, signal):
            return ToolResult([TextContent("no such server: nowhere")], is_error=True)

        async def picture(args, signal):
            return ToolResult([TextContent("one picture"), ImageContent(base64.b64encode(PNG).decode(), "image/png")])

        registry.register_tool(ToolSpec("echo", "Echo text back.", ECHO_SCHEMA, echo))
        registry.register_tool(ToolSpec("fails", "Always fails.", {"type": "object"}, fails))
        registry.register_tool(ToolSpec("picture", "Returns an image.", {"type": "object"}, picture))


def reply(*events):
    async def run(context, signal):
        for event in events:
            yield event

    return run


def done(text: str = "", **usage) -> Done:
    return Done(AssistantMessage([TextContent(text)] if text else [], usage=Usage(**usage), model="resolved-model"))


@pytest.fixture
def make_host():
    hosts: list[LlmHost] = []

    def make(*extensions) -> LlmHost:
        host = LlmHost(extensions)
        hosts.append(host)
        return host

    yield make
    for host in hosts:
        host.close()


def model_of(host: LlmHost, model_id: str = "scripted/one") -> llm.Model:
    return {model.model_id: model for model in host.models()}[model_id]


def test_models_carry_provider_and_model_ids(make_host):
    host = make_host(Scripted())
    models = host.models()
    assert [m.model_id for m in models] == ["scripted/one", "scripted/two"]
    assert all(m.supports_tools and m.can_stream for m in models)
    assert "image/png" in models[0].attachment_types and not models[1].attachment_types
    assert str(models[0]) == "Scripted One: scripted/one"


def test_text_streams_and_usage_is_recorded(make_host):
    provider = Scripted(reply(TextDelta("Hel"), TextDelta("lo"), done("Hello", input_tokens=5, output_tokens=2,
                                                                         cache_read_tokens=3)))
    host = make_host(provider)
    response = model_of(host).prompt("hi", system="be brief")
    assert list(response) == ["Hel", "lo"]
    assert response.usage().input == 5 and response.usage().output == 2
    assert response.usage().details == {"cache_read_tokens": 3}
    assert response.resolved_model == "resolved-model"
    assert provider.contexts[0] == Context("be brief", (UserMessage((TextContent("hi"),)),), ())


def test_text_arrives_before_the_reply_ends(make_host):
    first_seen = threading.Event()

    async def run(context, signal):
        yield TextDelta("first ")
        # The provider continues only once llm's side has the first chunk in hand: a bridge
        # that buffered the whole reply would never deliver it, and this answers "buffered".
        seen = await asyncio.to_thread(first_seen.wait, 30)
        yield TextDelta("second" if seen else "buffered")
        yield done()

    host = make_host(Scripted(run))
    chunks = []
    for chunk in model_of(host).prompt("hi"):
        chunks.append(chunk)
        first_seen.set()
    assert chunks == ["first ", "second"]


def test_thinking_is_reasoning_not_reply_text(make_host):
    host = make_host(Scripted(reply(ThinkingDelta("pondering"), TextDelta("answer"), done("answer"))))
    response = model_of(host).prompt("hi")
    events = list(response.stream_events())
    assert [(e.type, e.chunk) for e in events] == [("reasoning", "pondering"), ("text", "answer")]
    assert response.text() == "answer"


def test_error_event_raises_model_error_and_is_never_reply_text(make_host):
    host = make_host(Scripted(reply(TextDelta("partial "), ErrorEvent("usage limit reached", code="quota"))))
    response = model_of(host).prompt("hi")
    with pytest.raises(llm.ModelError, match="usage limit reached"):
        response.text()
    assert "usage limit" not in "".join(response._chunks)


def test_stream_without_result_is_an_error(make_host):
    host = make_host(Scripted(reply(TextDelta("cut off"))))
    with pytest.raises(llm.ModelError, match="without a result"):
        model_of(host).prompt("hi").text()


def test_unavailable_provider_lists_models_and_explains_on_use(make_host):
    provider = Scripted(unavailable="`claude` was not found on PATH; install Claude Code")
    host = make_host(provider)
    model = model_of(host)
    assert str(model) == "Scripted One: scripted/one (unavailable)"
    with pytest.raises(llm.ModelError, match="scripted/one is unavailable: `claude` was not found on PATH"):
        model.prompt("hi").text()
    assert provider.contexts == []


def test_tool_call_runs_and_result_reaches_the_next_request(make_host):
    call = ToolCall("toolu_1", "echo", {"text": "ping"})
    provider = Scripted(
        reply(TextDelta("Calling."), ToolCallEvent(call), Done(AssistantMessage([TextContent("Calling."), call],
                                                                                stop_reason="toolUse"))),
        reply(TextDelta("It said pong."), done("It said pong.")),
    )
    echo = Echo()
    host = make_host(provider, echo)
    chain = model_of(host).chain("use echo", tools=host.tools(), system="sys")
    assert chain.text() == "Calling. It said pong."
    assert echo.calls == [{"text": "ping"}]
    second = provider.contexts[1]
    assert second.system_prompt == "sys"
    assert second.messages == (
        UserMessage((TextContent("use echo"),)),
        AssistantMessage((TextContent("Calling."), ToolCall("toolu_1", "echo", {"text": "ping"}))),
        ToolResultMessage("toolu_1", "echo", (TextContent("echo: ping"),), False),
    )
    assert [t.name for t in second.tools] == ["echo", "fails", "picture"]
    assert second.tools[0].parameters == ECHO_SCHEMA and second.tools[0].description == "Echo text back."


def test_a_parameter_of_several_json_types_is_listed_as_any(make_host):
    """JSON Schema allows `"type": ["string", "null"]`; it once crashed the whole tool listing."""
    schema = {"type": "object", "properties": {"note": {"type": ["string", "null"]}, "n": {"type": "integer"}}}

    async def noop(args, signal):
        return ToolResult([TextContent("ok")])

    class Nullable:
        def register(self, registry: Registry) -> None:
            registry.register_tool(ToolSpec("nullable", "Takes a nullable note.", schema, noop))

    (tool,) = make_host(Nullable()).tools()
    parameters = inspect.signature(tool.implementation).parameters
    assert parameters["note"].annotation is Any and parameters["n"].annotation is int


def test_tool_error_result_is_an_llm_tool_error(make_host):
    call = ToolCall("toolu_2", "fails", {})
    provider = Scripted(reply(ToolCallEvent(call), done()), reply(done("ok")))
    host = make_host(provider, Echo())
    results = []
    chain = model_of(host).chain("x", tools=host.tools(), after_call=lambda tool, tc, result: results.append(result))
    chain.text()
    assert results[0].output == "Error: no such server: nowhere"
    assert isinstance(results[0].exception, ToolError)
    assert provider.contexts[1].messages[-1] == ToolResultMessage(
        "toolu_2", "fails", (TextContent("Error: no such server: nowhere"),), True
    )


def test_tool_images_become_attachments_and_reach_the_model(make_host):
    call = ToolCall("toolu_3", "picture", {})
    provider = Scripted(reply(ToolCallEvent(call), done()), reply(done("a dot")))
    host = make_host(provider, Echo())
    results = []
    model_of(host).chain("x", tools=host.tools(), after_call=lambda t, c, r: results.append(r)).text()
    assert results[0].output == "one picture"
    assert [a.content for a in results[0].attachments] == [PNG]
    image = ImageContent(base64.b64encode(PNG).decode(), "image/png")
    assert provider.contexts[1].messages[-2:] == (
        ToolResultMessage("toolu_3", "picture", (TextContent("one picture"),), False),
        UserMessage((image,)),
    )


def test_conversation_history_becomes_the_context(make_host):
    provider = Scripted(reply(TextDelta("A1"), done("A1")), reply(TextDelta("A2"), done("A2")))
    host = make_host(provider)
    conversation = model_of(host).conversation()
    conversation.prompt("Q1", system="sys").text()
    conversation.prompt("Q2").text()
    assert provider.contexts[1] == Context(
        "sys",
        (
            UserMessage((TextContent("Q1"),)),
            AssistantMessage((TextContent("A1"),)),
            UserMessage((TextContent("Q2"),)),
        ),
        (),
    )


def test_full_history_conversion(make_host):
    model = model_of(make_host(Scripted()))
    attachment = llm.Attachment(type="image/png", content=PNG)
    prompt = llm.Prompt(
        None,
        model,
        messages=[
            Message("system", [TextPart("first rule")]),
            Message("system", [TextPart("second rule")]),
            Message("user", [TextPart("look"), llm.parts.AttachmentPart(attachment)]),
            Message("assistant", [ReasoningPart("hmm"), ReasoningPart("", redacted=True), TextPart("ok"),
                                  ToolCallPart("echo", {"text": "a"}, "c1")]),
            Message("tool", [ToolResultPart("echo", "Error: boom", "c1", exception="ToolError: boom")]),
        ],
        tools=[llm.Tool("echo", "Echo.", ECHO_SCHEMA, lambda text: text)],
    )
    image = ImageContent(base64.b64encode(PNG).decode(), "image/png")
    assert context_from_prompt(prompt) == Context(
        "first rule\n\nsecond rule",
        (
            UserMessage((TextContent("look"), image)),
            AssistantMessage((ThinkingContent("hmm"), TextContent("ok"), ToolCall("c1", "echo", {"text": "a"}))),
            ToolResultMessage("c1", "echo", (TextContent("Error: boom"),), True),
        ),
        (context_from_prompt(prompt).tools[0],),
    )
    assert context_from_prompt(prompt).tools[0].name == "echo"


@pytest.mark.parametrize(
    ("message", "error"),
    [
        (Message("assistant", [ToolCallPart("echo", {}, None)]), "has no id"),
        (Message("tool", [ToolResultPart("echo", "x", None)]), "has no id"),
        (Message("user", [llm.parts.AttachmentPart(llm.Attachment(type="audio/wav", content=b"RIFF"))]),
         "unsupported attachment type 'audio/wav'"),
        (Message("narrator", [TextPart("x")]), "unsupported message role"),
        (Message("user", [ReasoningPart("x")]), "unsupported part in a user message: ReasoningPart"),
        (Message("assistant", [ToolCallPart("search", {}, "c1", server_executed=True)]),
         "unsupported part in an assistant message: ToolCallPart"),
        (Message("tool", [TextPart("x")]), "unsupported part in a tool message: TextPart"),
    ],
)
def test_history_it_cannot_carry_fails_clearly(make_host, message, error):
    model = model_of(make_host(Scripted()))
    with pytest.raises(llm.ModelError, match=error):
        context_from_prompt(llm.Prompt(None, model, messages=[message]))


def test_abandoned_response_cancels_and_closes_the_stream(make_host):
    observed = {}
    closed = threading.Event()

    async def run(context, signal):
        try:
            yield TextDelta("one")
            cancelled, loop = asyncio.Event(), asyncio.get_running_loop()
            signal.on_cancel(lambda: loop.call_soon_threadsafe(cancelled.set))
            await cancelled.wait()
            observed["reason"] = signal.reason
            yield ErrorEvent("aborted", code="aborted")
        finally:
            closed.set()

    host = make_host(Scripted(run))
    iterator = iter(model_of(host).prompt("hi"))
    assert next(iterator) == "one"
    iterator.close()
    # close() returns only after the stream ran its own cleanup on the loop.
    assert closed.is_set()
    assert observed["reason"] == "the response was abandoned"


def test_session_starts_once_on_first_use_and_shuts_down_on_close(make_host, monkeypatch, tmp_path: Path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOSTLINK_TRUST_PROJECT", "1")
    provider = Scripted(reply(done("a")), reply(done("b")))
    host = make_host(provider, Echo())
    host.models(), host.tools()
    assert provider.sessions == []  # registration and listing do nothing
    model_of(host).prompt("1").text()
    host.tools()[0].implementation(text="x")
    model_of(host).prompt("2").text()
    assert len(provider.sessions) == 1
    assert provider.sessions[0].cwd == tmp_path and provider.sessions[0].project_trusted
    host.close()
    host.close()
    assert provider.shutdowns == 1


@pytest.mark.parametrize(("value", "trusted"), [("1", True), ("yes", True), ("TRUE", True), ("0", False),
                                                ("no", False), ("", False), ("2", False)])
def test_project_trust_reads_the_variable_as_every_host_does(make_host, monkeypatch, value, trusted):
    from hostlink.host.trust import trust_from_environment

    monkeypatch.setenv("HOSTLINK_TRUST_PROJECT", value)
    provider = Scripted(reply(done("a")))
    model_of(make_host(provider)).prompt("1").text()
    assert provider.sessions[0].project_trusted is trusted is trust_from_environment({"HOSTLINK_TRUST_PROJECT": value})


def test_a_recorded_project_trust_lasts_until_the_project_files_change(make_host, monkeypatch, tmp_path, capfd):
    from hostlink.host.trust import trust

    monkeypatch.delenv("HOSTLINK_TRUST_PROJECT", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "repo" / "sub").mkdir()
    (tmp_path / "repo" / ".mcp.json").write_text('{"mcpServers": {}}')
    monkeypatch.chdir(tmp_path / "repo" / "sub")
    trust(tmp_path / "repo", os.environ)
    provider = Scripted(reply(done("a")))
    model_of(make_host(provider)).prompt("1").text()
    assert provider.sessions[0].project_trusted is True and provider.sessions[0].trust_again() is True
    (tmp_path / "repo" / ".mcp.json").write_text('{"mcpServers": {"x": {"command": "/bin/true"}}}')
    assert provider.sessions[0].trust_again() is False  # a reload in this session is untrusted
    later = Scripted(reply(done("b")))
    model_of(make_host(later)).prompt("1").text()
    assert later.sessions[0].project_trusted is False
    assert "changed since trusted" in capfd.readouterr().err


def test_close_cancels_tasks_an_extension_left_running(make_host):
    finished = threading.Event()

    class Leaky:
        def register(self, registry):
            async def start(session):
                async def forever():
                    try:
                        await asyncio.Event().wait()
                    finally:
                        finished.set()

                asyncio.get_running_loop().create_task(forever())

            registry.on_session_start(start)
            registry.register_tool(ToolSpec("echo", "", {"type": "object"}, Echo_execute))

    async def Echo_execute(args, signal):
        return ToolResult([TextContent("ok")])

    host = make_host(Leaky())
    assert host.tools()[0].implementation() == "ok"
    host.close()
    assert finished.is_set()


def _interrupt_main_thread() -> None:
    """What Ctrl-C does: SIGINT delivered to the thread llm runs in."""
    signal_module = __import__("signal")
    signal_module.pthread_kill(threading.main_thread().ident, signal_module.SIGINT)


async def _until_cancelled(signal: CancelSignal) -> str:
    cancelled, loop = asyncio.Event(), asyncio.get_running_loop()
    signal.on_cancel(lambda: loop.call_soon_threadsafe(cancelled.set))
    await cancelled.wait()
    return signal.reason


def test_interrupt_during_a_response_cancels_the_request(make_host):
    observed = {}

    async def run(context, signal):
        yield TextDelta("working")
        _interrupt_main_thread()
        observed["reason"] = await _until_cancelled(signal)
        yield ErrorEvent("aborted", code="aborted")

    host = make_host(Scripted(run))
    with pytest.raises(KeyboardInterrupt):
        model_of(host).prompt("hi").text()
    assert observed["reason"] == "the response was abandoned"


def test_interrupt_during_a_tool_call_cancels_the_call(make_host):
    observed = {}

    class Slow:
        def register(self, registry):
            async def slow(args, signal):
                _interrupt_main_thread()
                observed["reason"] = await _until_cancelled(signal)
                return ToolResult([TextContent("cancelled")], is_error=True)

            registry.register_tool(ToolSpec("slow", "", {"type": "object"}, slow))

    host = make_host(Slow())
    with pytest.raises(KeyboardInterrupt):
        host.tools()[0].implementation()
    assert observed["reason"] == "interrupted"


# A SIGINT that lands after a wait checked for its item but before it went to sleep only sets
# Python's pending-interrupt flag: it wakes nothing. `_thread.interrupt_main` does exactly that,
# so these two tests hold that window open on purpose (a loaded machine opened it by chance, and
# the suite hung there, the extension waiting for the cancel the interrupt sends).


def test_an_interrupt_that_wakes_nothing_still_ends_a_stalled_response(make_host):
    observed = {}

    async def run(context, signal):
        yield TextDelta("working")
        await asyncio.sleep(0.2)  # the main thread is asleep waiting for the next item by now
        _thread.interrupt_main()
        try:
            observed["reason"] = await asyncio.wait_for(_until_cancelled(signal), 5)
        except TimeoutError:
            observed["reason"] = "not cancelled within 5 s"
            yield TextDelta("the next item")  # what a plain wait needs before it raises
        yield ErrorEvent("aborted", code="aborted")

    host = make_host(Scripted(run))
    with pytest.raises(KeyboardInterrupt):
        model_of(host).prompt("hi").text()
    assert observed["reason"] == "the response was abandoned"


def test_an_interrupt_that_wakes_nothing_still_ends_a_stalled_tool_call(make_host):
    observed = {}

    class Stalled:
        def register(self, registry):
            async def stalled(args, signal):
                await asyncio.sleep(0.2)  # the main thread is asleep waiting for the result
                _thread.interrupt_main()
                try:
                    observed["reason"] = await asyncio.wait_for(_until_cancelled(signal), 5)
                except TimeoutError:
                    observed["reason"] = "not cancelled within 5 s"
                return ToolResult([TextContent("cancelled")], is_error=True)

            registry.register_tool(ToolSpec("stalled", "", {"type": "object"}, stalled))

    host = make_host(Stalled())
    with pytest.raises(KeyboardInterrupt):
        host.tools()[0].implementation()
    assert observed["reason"] == "interrupted"


def _interrupt_once_begun(monkeypatch, begun: threading.Event) -> None:
    """The interrupt lands in the caller just after the loop began the work, before the caller
    waits on it: the window a loaded machine opened for the two tests above."""
    import hostlink.adapters.llm.llm_host as llm_host

    start = llm_host._Loop.start

    def start_then_interrupt(self, make, future):
        start(self, make, future)
        assert begun.wait(10)
        raise KeyboardInterrupt

    monkeypatch.setattr(llm_host._Loop, "start", start_then_interrupt)


def test_an_interrupt_just_after_a_tool_call_began_still_cancels_and_waits(make_host, monkeypatch):
    observed, begun = {}, threading.Event()

    class Slow:
        def register(self, registry):
            async def slow(args, signal):
                begun.set()
                observed["reason"] = await _until_cancelled(signal)
                return ToolResult([TextContent("cancelled")], is_error=True)

            registry.register_tool(ToolSpec("slow", "", {"type": "object"}, slow))

    host = make_host(Slow())
    _interrupt_once_begun(monkeypatch, begun)
    with pytest.raises(KeyboardInterrupt):
        host.tools()[0].implementation()
    assert observed["reason"] == "interrupted"


def test_an_interrupt_just_after_a_response_began_still_cancels_and_waits(make_host, monkeypatch):
    observed, begun = {}, threading.Event()

    async def run(context, signal):
        begun.set()
        observed["reason"] = await _until_cancelled(signal)
        yield ErrorEvent("aborted", code="aborted")

    host = make_host(Scripted(run))
    model = model_of(host)
    _interrupt_once_begun(monkeypatch, begun)
    with pytest.raises(KeyboardInterrupt):
        model.prompt("hi").text()
    assert observed["reason"] == "the response was abandoned"


class Fragile:
    """An extension whose session start or shutdown fails."""

    def __init__(self, start_error: str | None = None, shutdown_error: str | None = None) -> None:
        self.start_error, self.shutdown_error = start_error, shutdown_error
        self.starts = 0

    def register(self, registry):
        async def start(session):
            self.starts += 1
            if self.start_error:
                raise RuntimeError(self.start_error)

        async def shutdown():
            if self.shutdown_error:
                raise RuntimeError(self.shutdown_error)

        async def execute(args, signal):
            return ToolResult([TextContent("ran")])

        registry.on_session_start(start)
        registry.on_session_shutdown(shutdown)
        registry.register_tool(ToolSpec("probe", "", {"type": "object"}, execute))


def test_failed_session_start_fails_every_use_and_is_not_retried(make_host):
    fragile = Fragile(start_error="configuration unreadable")
    host = make_host(fragile)
    for _ in range(2):
        with pytest.raises(RuntimeError, match="configuration unreadable"):
            host.tools()[0].implementation()
    assert fragile.starts == 1


def test_failed_shutdown_is_reported_not_raised(make_host, capsys):
    host = make_host(Fragile(shutdown_error="server would not stop"))
    assert host.tools()[0].implementation() == "ran"
    host.close()
    assert "hostlink error: session shutdown failed: server would not stop" in capsys.readouterr().err


def test_a_tool_that_raises_raises_to_llm(make_host):
    class Broken:
        def register(self, registry):
            async def broken(args, signal):
                raise RuntimeError("disk full")

            registry.register_tool(ToolSpec("broken", "", {"type": "object"}, broken))

    with pytest.raises(RuntimeError, match="disk full"):
        make_host(Broken()).tools()[0].implementation()


def test_a_provider_that_raises_raises_to_llm(make_host):
    async def run(context, signal):
        yield TextDelta("partial")
        raise RuntimeError("provider bug")

    with pytest.raises(RuntimeError, match="provider bug"):
        model_of(make_host(Scripted(run))).prompt("hi").text()


def test_a_provider_stream_without_aclose_still_answers(make_host):
    """A provider's stream may be any async iterator, not only an async generator."""

    class Events:
        def __init__(self, *events) -> None:
            self.events = iter(events)

        def __aiter__(self):
            return self

        async def __anext__(self):
            try:
                return next(self.events)
            except StopIteration:
                raise StopAsyncIteration from None

    class Plain:
        def register(self, registry):
            registry.register_provider(ProviderSpec(
                name="plain", models=(ModelSpec("one", "Plain One"),),
                stream=lambda model, context, signal: Events(TextDelta("plain answer"), done("plain answer"))))

    assert model_of(make_host(Plain()), "plain/one").prompt("hi").text() == "plain answer"


def test_first_use_from_a_thread_leaves_the_signal_handlers_alone(make_host):
    """Signal handlers can only be set from the main thread: a program that runs llm in a
    worker thread keeps its own, and its calls work."""
    signal_module = __import__("signal")
    host = make_host(Echo())
    previous = signal_module.signal(signal_module.SIGTERM, signal_module.SIG_DFL)
    try:
        outcome = {}
        worker = threading.Thread(target=lambda: outcome.update(text=host.tools()[0].implementation(text="x")))
        worker.start()
        worker.join(30)
        assert outcome == {"text": "echo: x"}
        assert signal_module.getsignal(signal_module.SIGTERM) is signal_module.SIG_DFL
    finally:
        signal_module.signal(signal_module.SIGTERM, previous)


def _interrupt_before_begun(monkeypatch, gate: threading.Event) -> None:
    """The interrupt lands in the caller after it handed the work to the loop but before the loop
    began it (the loop held busy until `gate` opens); once, the next call runs as usual."""
    import hostlink.adapters.llm.llm_host as llm_host

    start = llm_host._Loop.start

    def start_then_interrupt(self, make, future):
        monkeypatch.setattr(llm_host._Loop, "start", start)
        self._loop.call_soon_threadsafe(gate.wait, 30)
        start(self, make, future)
        raise KeyboardInterrupt

    monkeypatch.setattr(llm_host._Loop, "start", start_then_interrupt)


def test_a_tool_call_interrupted_before_it_began_never_runs(make_host, monkeypatch):
    echo = Echo()
    host = make_host(echo)
    host.tools()[0].implementation(text="first")  # the loop and the session are up
    gate = threading.Event()
    _interrupt_before_begun(monkeypatch, gate)
    with pytest.raises(KeyboardInterrupt):
        host.tools()[0].implementation(text="interrupted")
    gate.set()
    assert host.tools()[0].implementation(text="last") == "echo: last"
    assert echo.calls == [{"text": "first"}, {"text": "last"}]


def test_a_response_interrupted_before_it_began_never_reaches_the_provider(make_host, monkeypatch):
    provider = Scripted(reply(TextDelta("first"), done("first")), reply(TextDelta("second"), done("second")))
    host = make_host(provider)
    model = model_of(host)
    assert model.prompt("1").text() == "first"
    gate = threading.Event()
    _interrupt_before_begun(monkeypatch, gate)
    with pytest.raises(KeyboardInterrupt):
        model.prompt("interrupted").text()
    gate.set()
    assert model.prompt("2").text() == "second"
    assert [context.messages[-1] for context in provider.contexts] == [UserMessage((TextContent("1"),)),
                                                                      UserMessage((TextContent("2"),))]


def _ignores_its_signal(cancelled: threading.Event):
    """A wait that only a cancelled task ends: an extension deaf to its cancel signal."""

    async def wait() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    return wait()


def test_a_tool_that_ignores_the_interrupt_is_cancelled_after_the_cleanup_bound(make_host, monkeypatch, caplog):
    import hostlink.adapters.llm.llm_host as llm_host

    monkeypatch.setattr(llm_host, "CLEANUP_SECONDS", 0.2)
    cancelled = threading.Event()

    class Deaf:
        def register(self, registry):
            async def deaf(args, signal):
                _interrupt_main_thread()
                await _ignores_its_signal(cancelled)

            registry.register_tool(ToolSpec("deaf", "", {"type": "object"}, deaf))

    host = make_host(Deaf())
    with pytest.raises(KeyboardInterrupt):
        host.tools()[0].implementation()
    assert cancelled.wait(10)
    host.close()
    assert [record.getMessage() for record in caplog.records if record.name == "asyncio"] == []  # settled cleanly


def test_a_response_that_ignores_the_interrupt_is_cancelled_after_the_cleanup_bound(make_host, monkeypatch):
    import hostlink.adapters.llm.llm_host as llm_host

    monkeypatch.setattr(llm_host, "CLEANUP_SECONDS", 0.2)
    cancelled = threading.Event()

    async def run(context, signal):
        yield TextDelta("working")
        _interrupt_main_thread()
        await _ignores_its_signal(cancelled)
        yield done("never")

    host = make_host(Scripted(run))
    with pytest.raises(KeyboardInterrupt):
        model_of(host).prompt("hi").text()
    assert cancelled.wait(10)


def test_extensions_cannot_be_replaced_once_the_plugin_made_its_host(monkeypatch):
    import hostlink.adapters.llm as plugin

    monkeypatch.setattr(plugin, "_host", None)
    monkeypatch.setattr(plugin, "_extensions", None)
    plugin.use_extensions([Echo()])
    assert [tool.name for tool in plugin.host().tools()] == ["echo", "fails", "picture"]
    with pytest.raises(RuntimeError, match="already running"):
        plugin.use_extensions([Scripted()])
    assert [model.model_id for model in plugin.host().models()] == []  # still the first extensions
