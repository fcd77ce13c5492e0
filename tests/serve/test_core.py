"""What both endpoints check of a request in process, and the API error a client gets: the
conversation's order, the tools and the tool choice, images, the model, and each provider
failure's status."""

from __future__ import annotations

import pytest

from hostlink.host import ErrorEvent, ModelSpec, ProviderSpec, TextContent, ToolCall, ToolDefinition
from hostlink.serve.core import (
    PROVIDER,
    ApiError,
    ConversationBuilder,
    ToolChoice,
    image,
    provider_error,
    provider_spec,
    resolve_model,
)

HI = [TextContent("hi")]
WEATHER = ToolDefinition("weather", "", {"type": "object"})


def _refusal(call):
    with pytest.raises(ApiError) as refused:
        call()
    return refused.value.status, refused.value.message


def _asked(tools=(WEATHER,)):
    conversation = ConversationBuilder()
    conversation.add_user(HI, "messages[0]")
    return conversation, tools


def test_a_conversation_must_start_with_the_user_and_a_call_be_answered_before_anything_else():
    conversation = ConversationBuilder()
    assert _refusal(lambda: conversation.add_assistant([TextContent("hello")], "messages[0]")) == (
        400, "messages[0]: the conversation must start with a user message")
    conversation.add_user(HI, "messages[0]")
    conversation.add_assistant([], "messages[1]")  # an empty turn is left out
    conversation.add_assistant([ToolCall("c1", "weather", {})], "messages[1]")
    assert _refusal(lambda: conversation.add_user(HI, "messages[2]")) == (
        400, "messages[2]: the tool calls of messages[1] must be answered by tool results first")
    conversation.add_tool_result("c1", [TextContent("sunny")], False, "messages[2]")
    assert [message.role for message in conversation.build([WEATHER]).messages] == ["user", "assistant", "toolResult"]


def test_a_late_system_or_developer_message_stays_where_it_stands_and_the_system_prompt_unchanged():
    conversation = ConversationBuilder()
    conversation.add_instruction("", "system")
    conversation.add_instruction("Be brief.", "system")
    conversation.add_user(HI, "messages[1]")
    conversation.add_instruction("Use French.", "developer")  # folded into the user's turn
    conversation.add_instruction("", "developer")
    conversation.add_assistant([TextContent("salut")], "messages[3]")
    conversation.add_instruction("Now English.", "system")  # after an answer: a turn of its own
    conversation.add_user([TextContent("again")], "messages[5]")
    context = conversation.build([])
    assert context.system_prompt == "Be brief."
    first, _, late, last = context.messages
    assert first.content == (TextContent("hi"), TextContent("<developer-message>\nUse French.\n</developer-message>"))
    assert late.content == (TextContent("<system-message>\nNow English.\n</system-message>"),)
    assert last.content == (TextContent("again"),)


@pytest.mark.parametrize(("tools", "choice", "message"), [
    ((WEATHER, WEATHER), ToolChoice(), "tools: two tools share one name"),
    ((), ToolChoice("any"), "tool_choice: a tool must be called but no tools are given"),
    ((WEATHER,), ToolChoice("tool", "forecast"), "tool_choice: names a tool that is not in tools"),
])
def test_tools_and_a_tool_choice_that_cannot_be_honoured_are_a_bad_request(tools, choice, message):
    conversation, _ = _asked()
    assert _refusal(lambda: conversation.build(tools, choice)) == (400, message)


def test_the_tool_choice_reaches_claude_as_the_tools_offered_and_a_line_of_the_system_prompt():
    forecast = ToolDefinition("forecast", "", {"type": "object"})
    conversation, _ = _asked()
    conversation.add_system("Be brief.")
    assert conversation.build([WEATHER], ToolChoice("none")).tools == ()
    some = conversation.build([WEATHER, forecast], ToolChoice("any"))
    assert some.system_prompt == "Be brief.\n\nIn this answer you must call at least one of the available tools."
    one = conversation.build([WEATHER, forecast], ToolChoice("tool", "forecast"))
    assert one.tools == (forecast,) and one.system_prompt.endswith("you must call the tool forecast.")


def test_an_image_must_be_a_known_type_with_base64_data():
    assert _refusal(lambda: image("not base64!", "image/png", "messages[0].content[1]")) == (
        400, "messages[0].content[1]: the image data is not valid base64")
    assert _refusal(lambda: image("", "image/png", "m")) == (400, "m: the image data is missing")


def test_a_model_is_named_by_alias_or_family_and_an_unavailable_provider_says_why():
    async def stream(model, context, signal):
        yield None

    models = [ModelSpec("sonnet", "Sonnet"), ModelSpec("opus", "Opus")]
    assert _refusal(lambda: provider_spec({})) == (503, "the Claude Code provider is not registered in this host")
    provider = provider_spec({PROVIDER: ProviderSpec(PROVIDER, models, stream)})
    assert resolve_model(provider, "claude-opus-4-1-20250805").id == "opus"
    assert _refusal(lambda: resolve_model(provider, "gpt-5")) == (
        404, "model 'gpt-5' not found; available: sonnet, opus")
    unavailable = ProviderSpec(PROVIDER, models, stream, unavailable="the claude CLI is not installed")
    assert _refusal(lambda: resolve_model(unavailable, "sonnet")) == (503, "the claude CLI is not installed")


@pytest.mark.parametrize(("code", "status", "kind"), [
    ("not_found", 404, "not_found"), ("too_large", 413, "too_large"), ("plan_refused", 403, "permission"),
    ("provider_unavailable", 529, "overloaded"), ("unavailable", 503, "api"), ("timeout", 504, "api"),
    ("something new", 500, "api"),
])
def test_each_provider_failure_is_its_api_status_with_the_providers_words(code, status, kind):
    error = provider_error(ErrorEvent("the words", code=code))
    assert (error.status, error.kind, error.message) == (status, kind, "the words")
