"""`count_tokens`' estimate: what each part of a conversation adds to the number a client sees."""

from __future__ import annotations

from hostlink.host import (
    AssistantMessage,
    Context,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
)
from hostlink.serve.tokens import estimate


def test_every_part_of_a_conversation_counts():
    context = Context("sys", (
        UserMessage((TextContent("hello"), ImageContent("AAAA", "image/png"))),
        AssistantMessage((ThinkingContent("hmm"), ToolCall("c1", "echo", {"t": "x"}))),
        ToolResultMessage("c1", "echo", (TextContent("ok"),)),
    ), (ToolDefinition("echo", "Echo", {"type": "object"}),))  # fmt: skip
    # characters: 3 (system) + 5 (text) + 3 + 4 + 9 (thinking, the call) + 4 + 2 + 2 (the result's name,
    # id and text) + 4 + 4 + 17 (the tool) = 57, at 3.5 a token: 17; three messages at 4, an image
    # at 1600, a tool at 12.
    assert estimate(context) == 17 + 3 * 4 + 1600 + 12
    assert estimate(Context("", ())) == 0
