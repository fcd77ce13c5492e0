"""MCP sampling through the host's own models: opt-in per server (`"sampling": {"model":
"claude-code/haiku", "maxTokens": N}`), offered only when the host can also ask the person,
since every request is shown and approved first.

The request becomes a host Context (its system prompt and text and image messages) for the
configured model — never the model the server prefers — with no tools: a request that
brings tools, or content other than text and images, is refused. The answer is sanitized
and cut to the smaller of the request's and the configuration's token bound (at about four
characters a token, since the provider takes no output limit), and says so in its stop
reason.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any

from hostlink.host import (
    IMAGE_MIME_TYPES,
    Ask,
    AssistantMessage,
    CancelSignal,
    Complete,
    Context,
    Done,
    ErrorEvent,
    ImageContent,
    Message,
    Notifier,
    Question,
    TextContent,
    UserMessage,
)
from hostlink.host.output import one_line, strip_controls
from hostlink.mcp.config.schema import SamplingSettings

CHARS_PER_TOKEN = 4
PREVIEW_CHARS = 1500
MAX_MESSAGES = 100

Sample = Callable[[Any, Any], Any]  # the SDK's sampling callback: (context, params) -> result


class SamplingRefused(ValueError):
    """Why a sampling request is not run (the message is safe to show and to send)."""


def sampling_for(ask: Ask, complete: Complete, notifier: Notifier) -> Callable[[str, SamplingSettings], Sample]:
    """`for_server(name, settings)`: the SDK callback running server `name`'s requests."""

    def for_server(server: str, settings: SamplingSettings) -> Sample:
        async def sample(context: Any, params: Any) -> Any:
            from mcp_types import INVALID_REQUEST, CreateMessageResult, ErrorData
            from mcp_types import TextContent as McpText

            try:
                request, limit = context_of(params), min(params.max_tokens, settings.max_tokens)
            except SamplingRefused as refused:
                notifier.notify(f"MCP server {server!r} asked for a model answer hostlink does not give: {refused}",
                                "warning")
                return ErrorData(code=INVALID_REQUEST, message=f"sampling refused: {refused}")
            answer = await ask(Question(asker=server, message=_preview(settings.model, limit, request),
                                        fields={"type": "object", "properties": {}}))
            if answer.action != "accept":
                return ErrorData(code=INVALID_REQUEST, message="the user did not approve the sampling request")
            text, error = await _answer(complete, settings.model, request)
            if error is not None:
                return ErrorData(code=INVALID_REQUEST, message=f"sampling failed: {error}")
            cut = len(text) > limit * CHARS_PER_TOKEN
            kept = McpText(type="text", text=text[:limit * CHARS_PER_TOKEN])
            return CreateMessageResult(role="assistant", content=kept,
                                       model=settings.model, stop_reason="maxTokens" if cut else "endTurn")

        return sample

    return for_server


def context_of(params: Any) -> Context:
    """The request as a Context for the host's model; SamplingRefused for what is not taken."""
    if params.tools:
        raise SamplingRefused("a request with tools (hostlink's sampling carries none)")
    if len(params.messages) > MAX_MESSAGES:
        raise SamplingRefused(f"more than {MAX_MESSAGES} messages")
    messages: list[Message] = []
    for message in params.messages:
        blocks = message.content if isinstance(message.content, list) else [message.content]
        content = [_content(block) for block in blocks]
        if message.role == "assistant":
            texts = [item for item in content if isinstance(item, TextContent)]
            if len(texts) < len(content):
                raise SamplingRefused("an image in an assistant message")
            messages.append(AssistantMessage(tuple(texts)))
        else:
            messages.append(UserMessage(tuple(content)))
    if not messages or not isinstance(messages[-1], UserMessage):
        raise SamplingRefused("the last message must be the user's")
    return Context(strip_controls(params.system_prompt or ""), tuple(messages))


def _content(block: Any) -> TextContent | ImageContent:
    kind = getattr(block, "type", None)
    if kind == "text":
        return TextContent(block.text)
    if kind == "image" and block.mime_type in IMAGE_MIME_TYPES:
        try:
            base64.b64decode(block.data, validate=True)
        except (binascii.Error, ValueError):
            raise SamplingRefused("an image that is not valid base64") from None
        return ImageContent(block.data, block.mime_type)
    raise SamplingRefused(f"{one_line(str(kind), 40)} content (text and images only)")


def _preview(model: str, limit: int, context: Context) -> str:
    """What the person approves: the model, the bound and the request's own words."""
    lines = [f"wants {model} to answer this (at most {limit} tokens, no tools):"]
    if context.system_prompt:
        lines.append(f"[system] {context.system_prompt}")
    for message in context.messages:
        for item in message.content:
            lines.append(f"[{message.role}] " + (item.text if isinstance(item, TextContent) else "(an image)"))
    text = strip_controls("\n".join(lines))
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


async def _answer(complete: Complete, model: str, context: Context) -> tuple[str, str | None]:
    """The model's text, or the provider's error message (the stream is read to its end,
    so the provider finishes its own cleanup)."""
    text = ""
    error: str | None = "the model gave no answer"
    async for event in complete(model, context, CancelSignal()):
        if isinstance(event, ErrorEvent):
            error = event.message
        elif isinstance(event, Done):
            parts = [item.text for item in event.message.content if isinstance(item, TextContent)]
            text, error = strip_controls("".join(parts)), None
    return text, error
