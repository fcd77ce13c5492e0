"""The pydantic-ai host with a real pydantic-ai `Agent`: `ClaudeCodeModel` drives the real
`claude` CLI against the fake Anthropic API on 127.0.0.1; `HostlinkMcp` runs the real
`mcp` tool against the demo server over stdio, configured in a trusted project's
`.mcp.json`. After each test no `claude`, no server process and no private file is left.
"""

from __future__ import annotations

import asyncio
import base64
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, BinaryContent
from pydantic_ai.exceptions import ModelAPIError, ModelAuthenticationError, ModelQuotaExceededError, UserError
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import ToolDefinition

from claude_transport_support import (
    FAKES,
    live_processes_mentioning,
)
from hostlink.adapters.pydantic_ai import ClaudeCodeModel, HostlinkMcp
from hostlink.claude_code import metrics, prewarm
from hostlink.claude_code.process import ClaudeTransportOptions
from llm_support import leftover_processes

sys.path.insert(0, str(FAKES))
import fake_anthropic as fa

from peers import CLAUDE, requires_claude

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGA"
                        "hKmMIQAAAABJRU5ErkJggg==")


@pytest.fixture(autouse=True)
def nothing_left(runtime_dir):
    """No claude left, and (runtime_dir checks it) no private file but the doctor's
    last-request facts, which are kept on purpose."""
    yield
    assert live_processes_mentioning(str(runtime_dir)) == []
    (runtime_dir / metrics.FILE_NAME).unlink(missing_ok=True)


@pytest.fixture
def claude_model(api, home, runtime_dir):
    return new_claude_model(api, home)


def new_claude_model(api, home: Path) -> ClaudeCodeModel:
    return ClaudeCodeModel("sonnet", cwd=home,
                           options=ClaudeTransportOptions(test_api_base_url=api.base_url, test_api_key="sk-fake-test"),
                           environ={"HOME": str(home),
                                    "PATH": f"{Path(CLAUDE).parent}{os.pathsep}{os.environ['PATH']}"})


def blocks(request: dict, kind: str) -> list[dict]:
    return [block for message in request["messages"] if isinstance(message["content"], list)
            for block in message["content"] if block.get("type") == kind]


# --- HostlinkMcp with pydantic-ai's own function model -------------------------------------


def calls_the_demo(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """First the mcp tool on the demo server's echo, then the tool's text as the answer."""
    returns = [part for message in messages for part in getattr(message, "parts", ())
               if isinstance(part, ToolReturnPart)]
    if not returns:
        arguments = {"action": "call", "server": "demo", "tool": "echo", "args": {"text": "hello pydantic-ai"}}
        return ModelResponse(parts=[ToolCallPart("mcp", arguments)])
    return ModelResponse(parts=[TextPart(f"the tool said: {returns[-1].model_response_str()}")])


@pytest.mark.anyio
async def test_hostlink_mcp_runs_the_demo_server_for_any_model(project, marker):
    toolset = HostlinkMcp(trust_project=True, cwd=project)
    agent = Agent(FunctionModel(calls_the_demo), toolsets=[toolset])
    async with agent:
        result = await agent.run("use the demo")
        assert "hello pydantic-ai" in result.output
        assert len(leftover_processes(marker)) == 1  # the connection lives while the agent is entered
        tools = await toolset.get_tools(None)  # type: ignore[arg-type]
        assert list(tools) == ["mcp"] and "servers" in tools["mcp"].tool_def.description.lower()
        assert "reconnect" in tools["mcp"].tool_def.parameters_json_schema["properties"]["action"]["enum"]
    assert leftover_processes(marker) == []


@pytest.mark.anyio
async def test_an_untrusted_project_configures_nothing(project, marker):
    agent = Agent(FunctionModel(calls_the_demo), toolsets=[HostlinkMcp(cwd=project)])
    result = await agent.run("use the demo")
    assert "hello pydantic-ai" not in result.output and "demo" in result.output  # the tool's error, seen
    assert leftover_processes(marker) == []


@pytest.mark.anyio
async def test_an_agent_tool_named_mcp_is_refused_naming_the_hostlink_toolset(tmp_path):
    agent = Agent(FunctionModel(calls_the_demo), toolsets=[HostlinkMcp(cwd=tmp_path)])

    @agent.tool_plain
    def mcp() -> str:
        """An application tool that happens to share the name."""
        return "mine"

    with pytest.raises(UserError, match=r"Hostlink MCP defines a tool whose name conflicts with .* the agent: 'mcp'"):
        await agent.run("use the demo")


ENDS_ENTERED = """
import asyncio, sys
from pydantic_ai import Agent
from pydantic_ai.models.function import FunctionModel
from test_pydantic_ai import calls_for_big_output
from hostlink.adapters.pydantic_ai import HostlinkMcp

async def main():
    agent = Agent(FunctionModel(calls_for_big_output), toolsets=[HostlinkMcp(trust_project=True, cwd=sys.argv[1])])
    await agent.__aenter__()  # and never leaves
    print((await agent.run("go")).output)

asyncio.run(main())
"""


def calls_for_big_output(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    if not any(isinstance(part, ToolReturnPart) for message in messages for part in getattr(message, "parts", ())):
        arguments = {"action": "call", "server": "demo", "tool": "big_output", "args": {"lines": 20000}}
        return ModelResponse(parts=[ToolCallPart("mcp", arguments)])
    return ModelResponse(parts=[TextPart("done")])


def test_a_process_that_ends_inside_the_agent_context_leaves_nothing(project, marker, runtime_dir):
    """The call overflows into a private file; the process exits without leaving the context."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), *sys.path])}  # this module too
    done = subprocess.run([sys.executable, "-c", ENDS_ENTERED, str(project)], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "done", done.stderr[-2000:]
    for _ in range(50):  # the server sees its standard input close
        if not leftover_processes(marker):
            break
        time.sleep(0.1)
    assert leftover_processes(marker) == []


@pytest.mark.anyio
async def test_outside_an_agent_the_toolset_says_how_to_use_it():
    with pytest.raises(UserError, match="pass it to an Agent"):
        await HostlinkMcp().get_tools(None)  # type: ignore[arg-type]


def test_importing_the_adapter_pays_no_mcp_sdk_import():
    code = ("import sys, hostlink.adapters.pydantic_ai; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'mcp'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_history_takes_data_images_and_names_what_it_cannot_take():
    from pydantic_ai.messages import ImageUrl, ModelRequest, UserPromptPart
    from pydantic_ai.models import ModelRequestParameters

    from hostlink.adapters.pydantic_ai.history import context_of

    data_url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    request = ModelRequest(parts=[UserPromptPart(["look", ImageUrl(data_url)])])
    (message,) = context_of([request], ModelRequestParameters(), None).messages
    assert [part.type for part in message.content] == ["text", "image"] and message.content[1].mime_type == "image/png"
    with pytest.raises(UserError, match="not as a web URL"):
        context_of([ModelRequest(parts=[UserPromptPart([ImageUrl("https://example.invalid/a.png")])])],
                   ModelRequestParameters(), None)
    with pytest.raises(UserError, match="cannot take BinaryContent input"):
        context_of([ModelRequest(parts=[UserPromptPart([BinaryContent(b"%PDF", media_type="application/pdf")])])],
                   ModelRequestParameters(), None)


def test_a_history_reaches_claude_as_the_host_messages_with_the_catalog():
    from pydantic_ai.messages import (
        CachePoint,
        FilePart,
        ModelSettingsDeltaPart,
        RetryPromptPart,
        SystemPromptPart,
        ThinkingPart,
    )
    from pydantic_ai.messages import TextContent as PydanticText

    from hostlink.adapters.pydantic_ai.history import MUST_CALL_A_TOOL, context_of
    from hostlink.host import (
        AssistantMessage,
        ImageContent,
        TextContent,
        ThinkingContent,
        ToolCall,
        ToolResultMessage,
        UserMessage,
    )

    with pytest.warns(UserWarning, match="`RetryPromptPart` is deprecated"):  # a history kept from an older pydantic-ai
        retries = [RetryPromptPart("city must be a name", tool_name="chart", tool_call_id="c2"),
                   RetryPromptPart("answer in French", tool_call_id="c3")]
    history: list[ModelMessage] = [
        ModelRequest(parts=[SystemPromptPart("Be brief."),
                            UserPromptPart(["chart ", CachePoint(), PydanticText("Paris")])]),
        ModelResponse(parts=[ThinkingPart("draw it"), TextPart("Drawing."),
                             ToolCallPart("chart", {"city": "Paris"}, tool_call_id="c1")]),
        ModelRequest(parts=[ToolReturnPart("chart", ["the chart", BinaryContent(PNG, media_type="image/png")], "c1")]),
        ModelResponse(parts=[FilePart(BinaryContent(PNG, media_type="image/png"))]),  # not Claude's: left out
        ModelRequest(parts=retries),
    ]
    catalog = ModelRequestParameters(function_tools=[ToolDefinition(name="chart", description="Draw a chart")],
                                     allow_text_output=False)
    context = context_of(history, catalog, "Answer in one line.")
    assert context.system_prompt == f"Be brief.\n\nAnswer in one line.\n\n{MUST_CALL_A_TOOL}"
    assert [(tool.name, tool.description) for tool in context.tools] == [("chart", "Draw a chart")]
    png = base64.b64encode(PNG).decode()
    failed_call, retry_words = context.messages[3:]
    assert list(context.messages[:3]) == [
        UserMessage((TextContent("chart "), TextContent("Paris"))),
        AssistantMessage((ThinkingContent("draw it"), TextContent("Drawing."),
                          ToolCall("c1", "chart", {"city": "Paris"}))),
        ToolResultMessage("c1", "chart", (TextContent("the chart"), ImageContent(png, "image/png"))),
    ]
    assert isinstance(failed_call, ToolResultMessage) and failed_call.is_error  # a failed call answers that call
    assert (failed_call.tool_call_id, failed_call.tool_name) == ("c2", "chart")
    assert "city must be a name" in failed_call.content[0].text
    assert isinstance(retry_words, UserMessage) and "answer in French" in retry_words.content[0].text
    assert context_of(history[:1], ModelRequestParameters(function_tools=catalog.function_tools), None).system_prompt \
        == "Be brief."  # text may answer: no demand to call a tool
    with pytest.raises(UserError, match="Claude Code cannot take a ModelSettingsDeltaPart in the message history"):
        context_of([ModelRequest(parts=[ModelSettingsDeltaPart(settings={"temperature": 0.5})])],
                   ModelRequestParameters(), None)


@pytest.mark.anyio
async def test_without_the_claude_cli_the_error_says_how_to_install_it(tmp_path):
    model = ClaudeCodeModel("sonnet", cwd=tmp_path, environ={"HOME": str(tmp_path), "PATH": str(tmp_path)})
    with pytest.raises(ModelAPIError, match="npm install -g @anthropic-ai/claude-code") as raised:
        await Agent(model).run("hello")
    assert raised.value.provider_error_code == "unavailable"
    with pytest.raises(UserError, match="use one of"):
        ClaudeCodeModel("gpt-5")


# --- ClaudeCodeModel over a scripted claude-code provider ------------------------------------


@pytest.fixture
def scripted(monkeypatch, tmp_path):
    """The `claude-code` provider of every ClaudeCodeModel made from now on streams the given
    replies' events in turn (the host session and its conversation rounds stay the real ones)."""
    from host_support import Notices, ScriptedClaudeCode
    from hostlink.host.session import HostSession

    replies: list[list] = []

    async def open_session(self) -> HostSession:
        host = HostSession([ScriptedClaudeCode(replies)])
        await host.start(cwd=tmp_path, project_trusted=False, notifier=Notices())
        return host

    monkeypatch.setattr(ClaudeCodeModel, "_open_session", open_session)
    return replies


def _done(*content, stop_reason: str = "stop"):
    from hostlink.host import AssistantMessage, Done, Usage

    return Done(AssistantMessage(content, stop_reason=stop_reason, usage=Usage(input_tokens=7, output_tokens=3),
                                 model="sonnet"))


@pytest.mark.anyio
async def test_a_streamed_run_runs_the_tool_claude_proposes(scripted):
    from hostlink.host import TextContent, TextDelta, ToolCall, ToolCallEvent

    call = ToolCall("toolu_1", "weather", {"city": "Paris"})
    scripted.extend([[ToolCallEvent(call), _done(call, stop_reason="toolUse")],
                     [TextDelta("It is "), TextDelta("sunny."), _done(TextContent("It is sunny."))]])
    ran = []
    agent = Agent(ClaudeCodeModel("sonnet"))

    @agent.tool_plain
    def weather(city: str) -> str:
        """The weather in a city."""
        ran.append(city)
        return f"sunny in {city}"

    async with agent.run_stream("weather in Paris?") as result:
        text = "".join([piece async for piece in result.stream_text(delta=True, debounce_by=None)])
    assert text == "It is sunny." and ran == ["Paris"]
    proposed = [part for message in result.all_messages() for part in getattr(message, "parts", ())
                if isinstance(part, ToolCallPart)]
    assert [(part.tool_name, part.args, part.tool_call_id) for part in proposed] == [
        ("weather", {"city": "Paris"}, "toolu_1")]


@pytest.mark.anyio
async def test_a_failure_mid_stream_is_the_model_error_of_its_code(scripted):
    from hostlink.host import ErrorEvent, TextDelta

    resets = int(time.time()) + 3600
    scripted.append([TextDelta("the start"), ErrorEvent("usage limit reached", code="quota_exceeded",
                                                         resets_at=resets)])
    with pytest.raises(ModelQuotaExceededError, match="usage limit reached") as raised:
        async with Agent(ClaudeCodeModel("sonnet")).run_stream("hello") as result:
            [piece async for piece in result.stream_text(delta=True, debounce_by=None)]
    assert raised.value.provider_error_code == "quota_exceeded" and 3500 < raised.value.retry_after <= 3600


@pytest.mark.anyio
async def test_a_provider_that_ends_without_an_answer_is_unexpected_behaviour(scripted):
    from pydantic_ai.exceptions import UnexpectedModelBehavior

    from hostlink.host import TextDelta

    scripted.append([TextDelta("cut off")])
    with pytest.raises(UnexpectedModelBehavior, match="ended without an answer"):
        await Agent(ClaudeCodeModel("sonnet")).run("hello")


# --- ClaudeCodeModel with the real claude CLI ----------------------------------------------


@pytest.mark.slow
@requires_claude
@pytest.mark.anyio
async def test_a_plain_answer(claude_model, api):
    api.push(fa.text("hello from Claude", input_tokens=20, output_tokens=5, cache_read_input_tokens=3))
    result = await Agent(claude_model, instructions="Be brief.").run("say hello")
    assert result.output == "hello from Claude"
    usage = result.usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (23, 5, 3)
    (request,) = api.messages_requests()
    assert "Be brief." in json.dumps(request["system"])


@pytest.mark.slow
@requires_claude
@pytest.mark.anyio
async def test_a_whole_answer_keeps_its_thinking(claude_model, api):
    api.push(fa.Reply((fa.Thinking("let me think"), fa.Text("thought through"))))
    result = await Agent(claude_model).run("think first")
    assert result.output == "thought through"
    parts = result.all_messages()[-1].parts
    assert [(part.part_kind, part.content) for part in parts] == [("thinking", "let me think"),
                                                                   ("text", "thought through")]  # fmt: skip


@pytest.mark.slow
@requires_claude
@pytest.mark.anyio
async def test_a_streamed_answer(claude_model, api):
    api.push(fa.Reply((fa.Thinking("let me think"), fa.Text("streamed in pieces")), chunk=4))
    async with Agent(claude_model).run_stream("stream please") as result:
        pieces = [piece async for piece in result.stream_text(delta=True, debounce_by=None)]
    assert "".join(pieces) == "streamed in pieces" and len(pieces) > 1
    thinking = [part for part in result.all_messages()[-1].parts if part.part_kind == "thinking"]
    assert thinking and thinking[0].content == "let me think"


@pytest.mark.slow
@requires_claude
@pytest.mark.anyio
async def test_claude_proposes_a_function_tool_and_pydantic_ai_runs_it(claude_model, api):
    ran = []
    agent = Agent(claude_model)

    @agent.tool_plain
    def weather(city: str) -> str:
        """The weather in a city."""
        ran.append(city)
        return f"sunny in {city}"

    api.push(fa.tool_use("mcp__hostlink__weather", {"city": "Paris"}), fa.text("It is sunny in Paris."))
    result = await agent.run("weather in Paris?")
    assert ran == ["Paris"] and result.output == "It is sunny in Paris."
    first, second = api.messages_requests()
    assert "mcp__hostlink__weather" in [tool["name"] for tool in first["tools"]]
    assert "sunny in Paris" in json.dumps(second["messages"])  # the result, in the history Claude gets


@pytest.mark.slow
@requires_claude
@pytest.mark.anyio
async def test_arguments_pydantic_ai_refuses_come_back_to_claude_as_a_failed_call(claude_model, api):
    agent = Agent(claude_model)

    @agent.tool_plain
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    api.push(fa.tool_use("mcp__hostlink__weather", {"town": "Paris"}),
             fa.tool_use("mcp__hostlink__weather", {"city": "Paris"}), fa.text("Sunny."))
    assert (await agent.run("weather in Paris?")).output == "Sunny."
    second = json.dumps(api.messages_requests()[1]["messages"])
    assert "city" in second and "Field required" in second  # pydantic-ai's validation error, as the call's result


class City(BaseModel):
    name: str
    population: int


@pytest.mark.slow
@requires_claude
@pytest.mark.anyio
async def test_structured_output_through_the_output_tool(claude_model, api):
    api.push(fa.tool_use("mcp__hostlink__final_result", {"name": "Paris", "population": 2100000}))
    result = await Agent(claude_model, output_type=City).run("the biggest French city")
    assert result.output == City(name="Paris", population=2100000)
    (request,) = api.messages_requests()
    assert "must call one of the available tools" in json.dumps(request["system"])


@pytest.mark.slow
@requires_claude
@pytest.mark.anyio
async def test_an_image_in(claude_model, api):
    api.push(fa.text("a tiny image"))
    result = await Agent(claude_model).run(["what is this?", BinaryContent(PNG, media_type="image/png")])
    assert result.output == "a tiny image"
    (request,) = api.messages_requests()
    assert [base64.b64decode(block["source"]["data"]) for block in blocks(request, "image")] == [PNG]


@pytest.mark.slow
@requires_claude
@pytest.mark.anyio
async def test_provider_failures_are_model_errors_with_the_providers_message(claude_model, api):
    api.push(fa.usage_limit())  # resets an hour from now
    with pytest.raises(ModelQuotaExceededError) as raised:
        await Agent(claude_model).run("hello")
    assert "usage limit" in str(raised.value) and "try again at" in str(raised.value)
    assert raised.value.provider_error_code == "quota_exceeded" and 3500 < raised.value.retry_after <= 3600
    api.push(fa.HttpError(401, "authentication_error", "invalid x-api-key"))
    with pytest.raises(ModelAuthenticationError):
        await Agent(claude_model).run("hello")


@pytest.mark.slow
@requires_claude
@pytest.mark.anyio
async def test_cancelling_the_agent_task_stops_claude(claude_model, api, runtime_dir):
    api.push(fa.Reply((fa.Text("the start of a long answer"),), delay_before_delta=30))
    started = asyncio.Event()

    async def run() -> None:
        async with Agent(claude_model).run_stream("a long one") as result:
            async for _ in result.stream_text(delta=True):
                started.set()

    task = asyncio.create_task(run())
    await asyncio.wait_for(started.wait(), 60)
    assert live_processes_mentioning(str(runtime_dir))  # claude is running
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert live_processes_mentioning(str(runtime_dir)) == []


# --- both together --------------------------------------------------------------------------


@pytest.mark.slow
@requires_claude
@pytest.mark.anyio
async def test_claude_proposes_mcp_and_pydantic_ai_runs_it_on_the_demo_server(claude_model, api, project, marker):
    arguments = {"action": "call", "server": "demo", "tool": "add", "args": {"a": 1234, "b": 4321}}
    api.push(fa.tool_use("mcp__hostlink__mcp", arguments), fa.text("The demo added them."))
    agent = Agent(claude_model, toolsets=[HostlinkMcp(trust_project=True, cwd=project)])
    async with agent:
        result = await agent.run("echo through the demo")
    assert result.output == "The demo added them."
    first, second = api.messages_requests()
    assert "mcp__hostlink__mcp" in [tool["name"] for tool in first["tools"]]
    assert "5555" in json.dumps(second["messages"])  # the demo server's sum, in the history Claude gets
    assert leftover_processes(marker) == []


# --- the rounds of one run on one session: a prewarmed claude each round -----------------------


async def until(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.1)
    return True


def private_left(runtime_dir: Path) -> list[str]:
    """The private directories still there (the doctor's facts file is kept on purpose)."""
    return [path.name for path in runtime_dir.iterdir() if path.name != metrics.FILE_NAME]


def a_weather_request() -> tuple[list[ModelMessage], ModelRequestParameters]:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    return ([ModelRequest(parts=[UserPromptPart("weather in Paris?")])],
            ModelRequestParameters(function_tools=[ToolDefinition(name="weather", parameters_json_schema=schema)]))


@pytest.mark.slow
@requires_claude
@pytest.mark.anyio
async def test_the_rounds_of_an_agent_run_find_a_prewarmed_claude(claude_model, api, runtime_dir, cold_starts):
    agent = Agent(claude_model)

    @agent.tool_plain
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    api.push(*(fa.tool_use("mcp__hostlink__weather", {"city": city}) for city in ("Paris", "Rome", "Oslo")),
             fa.text("Sunny everywhere."))
    result = await agent.run("weather in three cities?")
    assert result.output == "Sunny everywhere." and len(api.messages_requests()) == 4
    assert len(cold_starts) == 1  # only the first round started cold: each later one took its prewarmed claude
    assert metrics.last()["child"] == "prewarmed"  # the doctor's facts
    assert live_processes_mentioning(str(runtime_dir)) == []  # the run ended: its session with it


@pytest.mark.slow
@requires_claude
@pytest.mark.anyio
async def test_cancelling_a_run_between_rounds_stops_its_prewarmed_claude(claude_model, api, runtime_dir):
    in_tool = asyncio.Event()
    agent = Agent(claude_model)

    @agent.tool_plain
    async def weather(city: str) -> str:
        """The weather in a city."""
        in_tool.set()
        await asyncio.sleep(3600)
        return "never"

    api.push(fa.tool_use("mcp__hostlink__weather", {"city": "Paris"}))
    task = asyncio.create_task(agent.run("weather in Paris?"))
    await asyncio.wait_for(in_tool.wait(), 60)
    assert await until(lambda: live_processes_mentioning(str(runtime_dir)) != [], 30)  # the next round's claude
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await until(lambda: live_processes_mentioning(str(runtime_dir)) == [], 10)  # well within the idle bound
    assert await until(lambda: private_left(runtime_dir) == [], 5)


@pytest.mark.slow
@requires_claude
@pytest.mark.anyio
async def test_a_collected_model_stops_its_prewarmed_claude(api, home, runtime_dir):
    model = new_claude_model(api, home)  # no fixture holds it: the test drops the last reference
    api.push(fa.tool_use("mcp__hostlink__weather", {"city": "Paris"}))
    messages, parameters = a_weather_request()
    response = await model.request(messages, None, parameters)
    assert isinstance(response.parts[0], ToolCallPart)
    assert await until(lambda: live_processes_mentioning(str(runtime_dir)) != [], 30)  # the next round's claude
    del model, response
    gc.collect()
    assert await until(lambda: live_processes_mentioning(str(runtime_dir)) == [], 10)  # well within the idle bound
    assert await until(lambda: private_left(runtime_dir) == [], 5)


@pytest.mark.slow
@requires_claude
@pytest.mark.anyio
async def test_an_unfollowed_round_stops_its_claude_within_the_idle_bound(claude_model, api, runtime_dir, monkeypatch):
    monkeypatch.setattr(prewarm, "IDLE_SECONDS", 2.0)
    api.push(fa.tool_use("mcp__hostlink__weather", {"city": "Paris"}))
    messages, parameters = a_weather_request()
    await claude_model.request(messages, None, parameters)
    assert await until(lambda: live_processes_mentioning(str(runtime_dir)) != [], 30)
    started = time.monotonic()
    assert await until(lambda: live_processes_mentioning(str(runtime_dir)) == [], 10)
    assert time.monotonic() - started < 2.0 + 5  # the bound, and the stop itself
    assert await until(lambda: private_left(runtime_dir) == [], 5)  # the parked session is shut down too


def test_an_extra_usage_mode_it_does_not_know_is_refused_by_name():
    with pytest.raises(UserError, match="extra_usage: 'sometimes' is not one of allow, warn, refuse"):
        ClaudeCodeModel("sonnet", extra_usage="sometimes")
