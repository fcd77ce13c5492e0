"""The message model: content, messages, a request's context and the events of a provider's
stream. Plain frozen data, no I/O; `hostlink.host` is its face."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

# --- content --------------------------------------------------------------------------


@dataclass(frozen=True)
class TextContent:
    text: str
    type: Literal["text"] = "text"


# The image types every part of hostlink accepts, with the file extension each is stored under.
IMAGE_EXTENSIONS: Mapping[str, str] = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif",
                                       "image/webp": "webp"}
IMAGE_MIME_TYPES = frozenset(IMAGE_EXTENSIONS)


@dataclass(frozen=True)
class ImageContent:
    """An image as base64 data; `mime_type` such as `image/png`."""

    data: str
    mime_type: str
    type: Literal["image"] = "image"


@dataclass(frozen=True)
class ThinkingContent:
    thinking: str
    type: Literal["thinking"] = "thinking"


@dataclass(frozen=True)
class ToolCall:
    """A tool call proposed by a model; the host decides whether and how to run it."""

    id: str
    name: str
    arguments: Mapping[str, Any]
    type: Literal["toolCall"] = "toolCall"


UserContent = TextContent | ImageContent
AssistantContent = TextContent | ThinkingContent | ToolCall

# --- messages -------------------------------------------------------------------------

StopReason = Literal["stop", "length", "toolUse", "error", "aborted"]


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost: float = 0.0


@dataclass(frozen=True)
class UserMessage:
    content: Sequence[UserContent]
    role: Literal["user"] = "user"


@dataclass(frozen=True)
class AssistantMessage:
    content: Sequence[AssistantContent]
    stop_reason: StopReason = "stop"
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    role: Literal["assistant"] = "assistant"
    stop_sequence: str | None = None  # the stop sequence the answer was cut at (stop_reason "stop")


@dataclass(frozen=True)
class ToolResultMessage:
    tool_call_id: str
    tool_name: str
    content: Sequence[UserContent]
    is_error: bool = False
    role: Literal["toolResult"] = "toolResult"


Message = UserMessage | AssistantMessage | ToolResultMessage


@dataclass(frozen=True)
class ToolDefinition:
    """What a model sees of a tool: its name, description and JSON Schema parameters."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True)
class GenerationSettings:
    """What a host may ask of one answer beyond its context (None: the provider's default).

    `max_output_tokens` caps the answer (it then stops with `length`); `effort` is one
    of `low`, `medium`, `high`, `xhigh`, `max`. `answer_tool` names a tool through
    which the model gives its final answer (structured output): an answer that only calls it
    ends the exchange, so the provider prepares no follow-up request. `stop_sequences` are
    where the host cuts the answer's text (the model cannot be told): an answer cut before its
    tool calls proposes none, so no follow-up is prepared for it either.
    """

    max_output_tokens: int | None = None
    effort: str | None = None
    answer_tool: str | None = None
    stop_sequences: tuple[str, ...] = ()

    def cut_in(self, texts: Iterable[str]) -> bool:
        """Whether the host cuts an answer whose text blocks are `texts` (a sequence lies in one)."""
        return any(stop in text for text in texts for stop in self.stop_sequences)


@dataclass(frozen=True)
class Context:
    """Everything a provider request carries: the host owns all of it. `options` are
    per-request provider settings a host passes through (`extra_usage` for Claude Code);
    a provider refuses a value it does not accept, naming it."""

    system_prompt: str
    messages: Sequence[Message]
    tools: Sequence[ToolDefinition] = ()
    options: Mapping[str, str] = field(default_factory=dict)
    settings: GenerationSettings = GenerationSettings()


def text_problem(value: str) -> str | None:
    """What keeps `value` out of a process argument, an environment value, a header or a
    file (`"a NUL character"`, `"a lone surrogate escape"`), or None when nothing does."""
    if "\0" in value:
        return "a NUL character"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "a lone surrogate escape"
    return None


# --- stream events --------------------------------------------------------------------


@dataclass(frozen=True)
class TextDelta:
    delta: str
    type: Literal["text_delta"] = "text_delta"


@dataclass(frozen=True)
class ThinkingDelta:
    delta: str
    type: Literal["thinking_delta"] = "thinking_delta"


@dataclass(frozen=True)
class ToolCallEvent:
    tool_call: ToolCall
    type: Literal["toolcall"] = "toolcall"


@dataclass(frozen=True)
class Done:
    message: AssistantMessage
    type: Literal["done"] = "done"
    # Whether the answer came from a process started ahead of the request (None: not said).
    prewarmed: bool | None = None
    # How many processes started ahead wait for a next round once it was done (None: not said).
    prewarmed_waiting: int | None = None


@dataclass(frozen=True)
class ErrorEvent:
    """A failed request. `code` is a stable identifier such as `context_length_exceeded`;
    `resets_at` (unix time) is when a usage limit lifts, when the provider said."""

    message: str
    code: str = "provider_error"
    retryable: bool = False
    resets_at: int | None = None
    type: Literal["error"] = "error"


StreamEvent = TextDelta | ThinkingDelta | ToolCallEvent | Done | ErrorEvent
