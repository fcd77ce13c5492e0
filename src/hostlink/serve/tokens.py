"""`POST /v1/messages/count_tokens`: an estimate, since hostlink has no Claude tokenizer.

The count is taken from the same `Context` the message request would
send (system prompt, messages, tools, the structured-output tool): one token per
`CHARS_PER_TOKEN` characters of its text (tool calls, arguments and schemas as compact
JSON), `MESSAGE_TOKENS` per message and `TOOL_TOKENS` per tool for the framing,
and `IMAGE_TOKENS` per image (the API's cost of an image at its largest size, so an
image is never under-counted). The answer says it is an estimate in the
`hostlink-token-count` header.
"""

from __future__ import annotations

import json
import math

from hostlink.host import (
    AssistantMessage,
    Context,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
)

CHARS_PER_TOKEN = 3.5
MESSAGE_TOKENS = 4
TOOL_TOKENS = 12
IMAGE_TOKENS = 1600
HEADER = (b"hostlink-token-count", b"estimate; characters/3.5, 1600 per image")


def estimate(context: Context) -> int:
    chars = len(context.system_prompt)
    tokens = 0
    for message in context.messages:
        tokens += MESSAGE_TOKENS
        parts = message.content
        if isinstance(message, ToolResultMessage):
            chars += len(message.tool_name) + len(message.tool_call_id)
        for part in parts:
            if isinstance(part, TextContent):
                chars += len(part.text)
            elif isinstance(part, ThinkingContent):
                chars += len(part.thinking) if isinstance(message, AssistantMessage) else 0
            elif isinstance(part, ToolCall):
                chars += len(part.name) + len(json.dumps(dict(part.arguments), separators=(",", ":")))
            else:  # an image: the content types are these four
                tokens += IMAGE_TOKENS
    for tool in context.tools:
        tokens += TOOL_TOKENS
        chars += len(tool.name) + len(tool.description) + len(json.dumps(dict(tool.parameters), separators=(",", ":")))
    return tokens + math.ceil(chars / CHARS_PER_TOKEN)
