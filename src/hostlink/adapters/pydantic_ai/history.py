"""pydantic-ai's message history and request parameters as a hostlink `Context`, and
the provider's answer back as pydantic-ai parts.

The history comes from the agent (already prepared by it), so this maps rather than
validates; what Claude Code cannot take (audio, documents, an image behind a web URL) is a
`UserError` naming the part, never silently dropped.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator, Sequence

from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import (
    BinaryContent,
    CachePoint,
    ImageUrl,
    ModelMessage,
    ModelResponse,
    ModelResponsePart,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.messages import TextContent as PydanticText
from pydantic_ai.models import ModelRequestParameters

from hostlink.host import (
    IMAGE_MIME_TYPES,
    AssistantContent,
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolDefinition,
    ToolResultMessage,
    UserContent,
    UserMessage,
)

MUST_CALL_A_TOOL = "In this answer you must call one of the available tools."


def context_of(messages: Sequence[ModelMessage], parameters: ModelRequestParameters,
               instructions: str | None) -> Context:
    """The Context of one request: system prompts and instructions, the conversation, and
    the function and output tools as the proposal catalog."""
    system: list[str] = []
    conversation: list[Message] = []
    for message in messages:
        if isinstance(message, ModelResponse):
            content = list(_assistant_content(message))
            if content:
                conversation.append(AssistantMessage(tuple(content)))
            continue
        for part in message.parts:
            if isinstance(part, SystemPromptPart):
                system.append(part.content)
            elif isinstance(part, UserPromptPart):
                conversation.append(UserMessage(tuple(_user_content(part))))
            elif isinstance(part, ToolReturnPart):
                result: tuple[TextContent | ImageContent, ...] = (TextContent(part.model_response_str()),
                                                                  *_images(part.files))
                conversation.append(ToolResultMessage(part.tool_call_id, part.tool_name, result,
                                                      part.outcome != "success"))
            elif isinstance(part, RetryPromptPart):
                conversation.append(_retry(part))
            else:
                raise UserError(f"Claude Code cannot take a {type(part).__name__} in the message history")
    if instructions:
        system.append(instructions)
    tools = [ToolDefinition(tool.name, tool.description or "", tool.parameters_json_schema)
             for tool in parameters.declared_tool_defs.values()]
    if tools and not parameters.allow_text_output:
        system.append(MUST_CALL_A_TOOL)
    return Context("\n\n".join(text for text in system if text), tuple(conversation), tuple(tools))


def _retry(part: RetryPromptPart) -> Message:
    """A failed tool call is answered as an error result; other retries are the user's words."""
    text = part.model_response()
    if part.tool_name is None:
        return UserMessage((TextContent(text),))
    return ToolResultMessage(part.tool_call_id, part.tool_name, (TextContent(text),), True)


def _user_content(part: UserPromptPart) -> Iterator[UserContent]:
    if isinstance(part.content, str):
        yield TextContent(part.content)
        return
    for item in part.content:
        if isinstance(item, str):
            yield TextContent(item)
        elif isinstance(item, PydanticText):
            yield TextContent(item.content)
        elif isinstance(item, CachePoint):
            continue
        else:
            yield from _images([item])


def _images(items: Sequence[object]) -> Iterator[ImageContent]:
    for item in items:
        if isinstance(item, ImageUrl) and item.url.startswith("data:"):
            item = BinaryContent.from_data_uri(item.url)
        if isinstance(item, BinaryContent) and item.media_type in IMAGE_MIME_TYPES:
            yield ImageContent(base64.b64encode(item.data).decode("ascii"), item.media_type)
        elif isinstance(item, ImageUrl):
            raise UserError("Claude Code takes images as data, not as a web URL: pass BinaryContent "
                            "or a data: URL")
        else:
            kinds = ", ".join(sorted(IMAGE_MIME_TYPES))
            raise UserError(f"Claude Code cannot take {type(item).__name__} input; images ({kinds}) and text only")


def _assistant_content(message: ModelResponse) -> Iterator[AssistantContent]:
    for part in message.parts:
        if isinstance(part, TextPart):
            yield TextContent(part.content)
        elif isinstance(part, ThinkingPart):
            yield ThinkingContent(part.content)
        elif isinstance(part, ToolCallPart):
            yield ToolCall(part.tool_call_id, part.tool_name, part.args_as_dict())
        # Other parts (files, native tool calls of other providers) are not Claude Code's.


def response_parts(message: AssistantMessage) -> list[ModelResponsePart]:
    """The provider's answer as pydantic-ai parts, tool calls under the agent's own names."""
    parts: list[ModelResponsePart] = []
    for item in message.content:
        if isinstance(item, TextContent):
            parts.append(TextPart(item.text))
        elif isinstance(item, ThinkingContent):
            parts.append(ThinkingPart(item.thinking))
        else:
            parts.append(ToolCallPart(item.name, dict(item.arguments), tool_call_id=item.id))
    return parts
