"""The tool choice of the framework adapters (LangChain, LiteLLM) in process: what Claude is
offered and told for each choice, and the error that names a choice that cannot be honoured."""

from __future__ import annotations

import re

import pytest

from hostlink.adapters.claude_request import ToolChoice, with_tools
from hostlink.host import Context, TextContent, ToolDefinition, UserMessage

CONTEXT = Context("Be brief.", (UserMessage((TextContent("weather in Paris?"),)),))
WEATHER = ToolDefinition("weather", "", {"type": "object"})
FORECAST = ToolDefinition("forecast", "", {"type": "object"})


def test_each_choice_offers_the_tools_it_allows_and_says_what_must_be_called():
    assert with_tools(CONTEXT, [WEATHER], ToolChoice("none")).tools == ()
    some = with_tools(CONTEXT, [WEATHER, FORECAST], ToolChoice("any"))
    assert some.tools == (WEATHER, FORECAST)
    assert some.system_prompt == "Be brief.\n\nIn this answer you must call at least one of the available tools."
    one = with_tools(CONTEXT, [WEATHER, FORECAST], ToolChoice("tool", "forecast"), answer_tool="forecast")
    assert one.tools == (FORECAST,) and one.system_prompt.endswith("you must call the tool forecast.")
    assert one.settings.answer_tool == "forecast"


@pytest.mark.parametrize(("tools", "choice", "message"), [
    ([], ToolChoice("any"), "tool_choice: a tool must be called but no tools are bound"),
    ([WEATHER], ToolChoice("tool", "forecast"), "tool_choice: 'forecast' is not among the bound tools"),
    ([WEATHER, WEATHER], ToolChoice(), "tools: two tools share one name"),
])
def test_a_choice_that_cannot_be_honoured_is_an_error_naming_it(tools, choice, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        with_tools(CONTEXT, tools, choice)
