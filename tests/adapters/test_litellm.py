"""The LiteLLM host with real litellm: `claude-code/<model>` after `register()` drives the real
`claude` CLI against the fake Anthropic API on 127.0.0.1 (completion, acompletion, streaming
both ways, tools as OpenAI `tool_calls`, `response_format`, refusals and errors). After each
test no `claude` and no private file is left, and LiteLLM's provider map is as it was.
"""

from __future__ import annotations

import enum
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from claude_transport_support import FAKES, live_processes_mentioning
from hostlink.claude_code.process import ClaudeTransportOptions

sys.path.insert(0, str(FAKES))
import fake_anthropic as fa

from peers import CLAUDE, requires_claude

pytestmark = [pytest.mark.slow, requires_claude, pytest.mark.usefixtures("registered"),
              # litellm's own types (a TypedDict of its device sign-in), when it builds a response
              pytest.mark.filterwarnings("ignore:Item.* using the `ReadOnly` qualifier:UserWarning")]
WEATHER = {"type": "function", "function": {"name": "weather", "description": "The weather in a city.",
                                            "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                           "required": ["city"]}}}
CITY = {"type": "object", "properties": {"name": {"type": "string"}, "population": {"type": "integer"}},
        "required": ["name", "population"]}


def user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def offered(request: dict) -> list[str]:
    return [tool["name"] for tool in request.get("tools", []) if tool["name"].startswith("mcp__")]


def test_completion_of_an_alias_and_a_family_id(api, litellm):
    api.push(fa.text("hello from Claude", input_tokens=20, output_tokens=5), fa.text("again"))
    answer = litellm.completion(model="claude-code/sonnet", messages=[{"role": "system", "content": "Be brief."},
                                                                      *user("say hello")])
    assert answer.choices[0].message.content == "hello from Claude" and answer.choices[0].finish_reason == "stop"
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens) == (20, 5)
    assert "Be brief." in json.dumps(api.messages_requests()[0]["system"])
    again = litellm.completion(model="claude-code/claude-sonnet-5-5", messages=user("hello"))
    assert again.choices[0].message.content == "again"


def test_roles_given_as_string_enums_are_their_values(api, litellm):
    """smolagents passes its `MessageRole` members (a `str` enum), which `str()` does not spell
    as their values: each is read as the role it equals."""

    class Role(str, enum.Enum):  # noqa: UP042  # as smolagents declares it: str() is not the value
        SYSTEM = "system"
        USER = "user"

    api.push(fa.text("Hi."))
    answer = litellm.completion(model="claude-code/sonnet", messages=[{"role": Role.SYSTEM, "content": "Be brief."},
                                                                      {"role": Role.USER, "content": "hello"}])
    assert answer.choices[0].message.content == "Hi."
    assert "Be brief." in json.dumps(api.messages_requests()[0]["system"])


@pytest.mark.anyio
async def test_acompletion_and_async_streaming(api, litellm):
    api.push(fa.text("async hello"), fa.Reply((fa.Text("async stream"),), chunk=3))
    answer = await litellm.acompletion(model="claude-code/haiku", messages=user("hello"))
    assert answer.choices[0].message.content == "async hello"
    stream = await litellm.acompletion(model="claude-code/haiku", messages=user("stream"), stream=True)
    pieces = [chunk.choices[0].delta.content or "" async for chunk in stream]
    assert "".join(pieces) == "async stream" and len([piece for piece in pieces if piece]) > 2


def test_tools_come_back_as_openai_tool_calls_and_their_results_go_to_claude(api, litellm):
    api.push(fa.tool_use("mcp__hostlink__weather", {"city": "Paris"}), fa.text("Sunny in Paris."))
    messages = user("weather in Paris?")
    answer = litellm.completion(model="claude-code/sonnet", messages=messages, tools=[WEATHER])
    (call,) = answer.choices[0].message.tool_calls
    assert call.function.name == "weather" and json.loads(call.function.arguments) == {"city": "Paris"}
    assert answer.choices[0].finish_reason == "tool_calls"
    messages += [answer.choices[0].message.model_dump(),
                 {"role": "tool", "tool_call_id": call.id, "content": "sunny in Paris"}]
    final = litellm.completion(model="claude-code/sonnet", messages=messages, tools=[WEATHER])
    assert final.choices[0].message.content == "Sunny in Paris."
    first, second = api.messages_requests()
    assert offered(first) == ["mcp__hostlink__weather"] and "sunny in Paris" in json.dumps(second["messages"])


def test_streaming_with_a_tool_call(api, litellm):
    api.push(fa.Reply((fa.Text("Let me look."), fa.ToolUse("mcp__hostlink__weather", {"city": "Oslo"})),
                      stop_reason="tool_use"))
    chunks = list(litellm.completion(model="claude-code/sonnet", messages=user("Oslo?"), tools=[WEATHER],
                                     stream=True))
    assert "".join(chunk.choices[0].delta.content or "" for chunk in chunks) == "Let me look."
    calls = [call for chunk in chunks for call in chunk.choices[0].delta.tool_calls or []]
    assert [call.function.name for call in calls] == ["weather"]
    assert json.loads(calls[0].function.arguments) == {"city": "Oslo"}
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_response_format_is_honoured_and_checked(api, litellm):
    api.push(fa.tool_use("mcp__hostlink__respond_with_json", {"name": "Paris", "population": 2100000}),
             fa.tool_use("mcp__hostlink__respond_with_json", {"name": "Paris"}))
    schema = {"type": "json_schema", "json_schema": {"name": "city", "schema": CITY}}
    answer = litellm.completion(model="claude-code/sonnet", messages=user("the biggest French city"),
                                response_format=schema)
    assert json.loads(answer.choices[0].message.content) == {"name": "Paris", "population": 2100000}
    with pytest.raises(litellm.InternalServerError, match="does not match the requested format"):
        litellm.completion(model="claude-code/sonnet", messages=user("again"), response_format=schema)


def test_what_claude_code_cannot_honour_is_refused_naming_it(api, litellm):
    with pytest.raises(litellm.BadRequestError, match="temperature"):
        litellm.completion(model="claude-code/sonnet", messages=user("hello"), temperature=0.2)
    with pytest.raises(litellm.BadRequestError, match="tool_choice"):
        litellm.completion(model="claude-code/sonnet", messages=user("hello"), tools=[WEATHER],
                           tool_choice={"type": "function", "function": {"name": "nowhere"}})
    with pytest.raises(litellm.NotFoundError, match="available: "):
        litellm.completion(model="claude-code/gpt-5", messages=user("hello"))
    assert api.messages_requests() == []


def test_provider_failures_are_litellm_errors_with_the_providers_message(api, litellm):
    api.push(fa.usage_limit())
    with pytest.raises(litellm.RateLimitError, match="usage limit"):
        litellm.completion(model="claude-code/sonnet", messages=user("hello"), num_retries=0)
    api.push(fa.HttpError(401, "authentication_error", "invalid x-api-key"))
    with pytest.raises(litellm.AuthenticationError, match="claude auth login"):
        litellm.completion(model="claude-code/sonnet", messages=user("hello"), num_retries=0)


def test_leaving_a_stream_early_stops_claude(api, runtime_dir, litellm):
    api.push(fa.Reply((fa.Text("the start of a long answer"),), chunk=4, delay_before_delta=30))
    stream = litellm.completion(model="claude-code/sonnet", messages=user("a long one"), stream=True)
    assert next(iter(stream)).choices[0].delta.content is not None
    assert live_processes_mentioning(str(runtime_dir))
    stream.completion_stream.close()
    assert live_processes_mentioning(str(runtime_dir)) == []


def test_thinking_is_not_streamed_as_content_and_an_answerless_stream_is_an_error(scripted_conversations, litellm):
    """Over a scripted claude-code provider (conftest's scripted_conversations)."""
    from hostlink.host import AssistantMessage, Done, TextContent, TextDelta, ThinkingDelta

    scripted_conversations.extend([[ThinkingDelta("let me see"), TextDelta("sunny"), Done(AssistantMessage(
        (TextContent("sunny"),)))], [TextDelta("cut off")]])
    chunks = litellm.completion(model="claude-code/sonnet", messages=user("weather?"), stream=True)
    assert "".join(chunk.choices[0].delta.content or "" for chunk in chunks) == "sunny"
    with pytest.raises(litellm.InternalServerError, match="the Claude Code stream ended without an answer"):
        litellm.completion(model="claude-code/sonnet", messages=user("weather?"))


def test_importing_the_adapter_loads_neither_the_mcp_sdk_nor_the_provider():
    code = ("import sys, hostlink.adapters.litellm; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'mcp' "
            "or m.startswith(('hostlink.claude_code.', 'hostlink.mcp', 'hostlink.serve'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['hostlink.claude_code.models']"


def test_the_extra_usage_guard_refuses_before_any_claude_starts(api, home, litellm, register):
    environ = {"HOME": str(home), "PATH": f"{Path(CLAUDE).parent}{os.pathsep}{os.environ['PATH']}"}
    options = ClaudeTransportOptions(test_api_base_url=api.base_url, test_oauth_token="sk-ant-oat01-fake-test")
    register(home, extra_usage="refuse", options=options, environ=environ)
    api.headers = fa.drawing_extra_usage()
    assert litellm.completion(model="claude-code/sonnet", messages=user("hello")).choices[0].message.content
    sent = len(api.messages_requests())
    with pytest.raises(litellm.RateLimitError, match="extra usage is refused"):
        litellm.completion(model="claude-code/sonnet", messages=user("hello again"), num_retries=0)
    assert len(api.messages_requests()) == sent
    with pytest.raises(ValueError, match="extra_usage"):
        register(extra_usage="sometimes")


def test_a_refused_plan_and_an_overlong_conversation_are_litellms_own_errors():
    import litellm as litellm_module

    from hostlink.adapters.litellm.provider import litellm_error
    from hostlink.serve.core import ApiError

    refused = litellm_error(ApiError(403, "permission", "extra usage is refused"), "sonnet")
    assert isinstance(refused, litellm_module.PermissionDeniedError) and refused.status_code == 403
    assert "extra usage is refused" in str(refused)
    overlong = litellm_error(ApiError(400, "invalid_request", "the conversation is too long"), "sonnet",
                             code="context_length_exceeded")  # fmt: skip
    assert isinstance(overlong, litellm_module.ContextWindowExceededError)
    assert "the conversation is too long" in str(overlong)
