"""What both wire formats share: errors, reading JSON fields, the models, and the one
request -> `Context` core.

A wire format (`anthropic`, `openai`) reads its own
JSON and feeds a `ConversationBuilder`; the builder enforces what both APIs require of
a conversation (it starts with the user, every tool result answers a tool call of the
assistant message just before it, every tool call is answered, it ends with the user) and
builds the Context the provider gets. Errors never quote prompt text or tool arguments.
"""

from __future__ import annotations

import base64
import binascii
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hostlink.host import (
    IMAGE_MIME_TYPES,
    AssistantContent,
    AssistantMessage,
    Context,
    ErrorEvent,
    ImageContent,
    Message,
    ModelSpec,
    ProviderSpec,
    TextContent,
    ToolCall,
    ToolDefinition,
    ToolResultMessage,
    UserContent,
    UserMessage,
)

PROVIDER = "claude-code"


class ApiError(Exception):
    """An error answer. `kind` is neutral (each wire format names it its own way):
    invalid_request, authentication, permission, not_found, too_large, rate_limit, api,
    overloaded. The message is safe to send: no prompt text, arguments, tokens or paths.
    `resets_at` (unix time) is when a plan limit lifts, carried in the error body."""

    def __init__(self, status: int, kind: str, message: str, *, param: str | None = None,
                 retry_after: int | None = None, resets_at: int | None = None) -> None:
        super().__init__(message)
        self.resets_at = resets_at
        self.status = status
        self.kind = kind
        self.message = message
        self.param = param
        self.retry_after = retry_after


def invalid(path: str, problem: str) -> ApiError:
    return ApiError(400, "invalid_request", f"{path}: {problem}" if path else problem, param=path or None)


# --- reading JSON ----------------------------------------------------------------------

_TYPE_NAMES = {str: "a string", bool: "a boolean", int: "an integer", list: "an array", dict: "an object",
               float: "a number"}


def field(obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], path: str, *,
          required: bool = False, default: Any = None) -> Any:
    """`obj[key]` checked against `kind`; a missing or null optional field is `default`."""
    where = f"{path}.{key}" if path else key
    value = obj.get(key)
    if value is None:
        if required:
            raise invalid(where, "field required")
        return default
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
        raise invalid(where, "expected " + " or ".join(_TYPE_NAMES.get(k, k.__name__) for k in kinds))
    return value


def objects(value: Any, path: str) -> list[tuple[str, dict[str, Any]]]:
    """The items of a JSON array of objects, each with its path."""
    if not isinstance(value, list):
        raise invalid(path, "expected an array")
    items = []
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise invalid(f"{path}.{index}", "expected an object")
        items.append((f"{path}.{index}", item))
    return items


def one_of(value: Any, choices: Sequence[str], path: str) -> str:
    for choice in choices:
        if value == choice:
            return choice  # the choice itself: an in-process client's str enum (smolagents' roles) is no str()
    raise invalid(path, "expected one of " + ", ".join(repr(c) for c in choices))


def image(data: Any, mime_type: Any, path: str) -> ImageContent:
    if not isinstance(mime_type, str) or mime_type not in IMAGE_MIME_TYPES:
        raise invalid(path, "unsupported image type; use one of " + ", ".join(sorted(IMAGE_MIME_TYPES)))
    if not isinstance(data, str) or not data:
        raise invalid(path, "the image data is missing")
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise invalid(path, "the image data is not valid base64") from None
    return ImageContent(data, mime_type)


def tool_definition(name: Any, description: Any, schema: Any, path: str) -> ToolDefinition:
    if not isinstance(name, str) or not name:
        raise invalid(f"{path}.name", "expected a non-empty string")
    if description is not None and not isinstance(description, str):
        raise invalid(f"{path}.description", "expected a string")
    if schema is None:
        schema = {"type": "object", "properties": {}}
    if not isinstance(schema, dict):
        raise invalid(path, "the input schema must be an object")
    return ToolDefinition(name, description or "", schema)


# --- models ----------------------------------------------------------------------------


def provider_spec(registry_providers: Mapping[str, ProviderSpec]) -> ProviderSpec:
    try:
        return registry_providers[PROVIDER]
    except KeyError:
        raise ApiError(503, "api", "the Claude Code provider is not registered in this host") from None


def model_alias(provider: ProviderSpec, name: str) -> ModelSpec | None:
    """The alias a model id means: `sonnet`, `claude-code/sonnet`, or any id of a family
    (`claude-sonnet-5-5`, `claude-opus-4-1-20250805`, `claude-sonnet-5-5[1m]`): the
    CLI's alias of that family, so the CLI, not the client, picks the family's model."""
    name = name.removeprefix(PROVIDER + "/")
    spec = provider.model(name)
    if spec is not None or not name.startswith("claude-"):
        return spec
    words = name.split("[", 1)[0].split("-")[1:]
    return next((spec for spec in provider.models if spec.id in words), None)


def resolve_model(provider: ProviderSpec, name: Any) -> ModelSpec:
    """The model a request names (see `model_alias`)."""
    if not isinstance(name, str) or not name:
        raise invalid("model", "field required")
    spec = model_alias(provider, name)
    if spec is None:
        known = ", ".join(spec.id for spec in provider.models)
        raise ApiError(404, "model_not_found", f"model {name[:80]!r} not found; available: {known}", param="model")
    if provider.unavailable:
        raise ApiError(503, "api", provider.unavailable)
    return spec


# --- the conversation ------------------------------------------------------------------


@dataclass(frozen=True)
class ToolChoice:
    """`auto` | `none` | `any` (some tool must be called) | `tool` (`name` must be)."""

    mode: str = "auto"
    name: str | None = None


_MUST_CALL_ANY = "In this answer you must call at least one of the available tools."


class ConversationBuilder:
    """Collects a conversation in order and checks what both APIs require of it."""

    def __init__(self) -> None:
        self.system: list[str] = []
        self.messages: list[Message] = []
        self._open: dict[str, str] = {}  # calls of the last assistant message still unanswered
        self._unanswered_at = ""

    def add_system(self, text: str) -> None:
        if text:
            self.system.append(text)

    def add_instruction(self, text: str, role: str) -> None:
        """A `system`/`developer` message: part of the system prompt before the first
        message, afterwards folded into the conversation where it stands (marked as such),
        so a client's late reminders keep the system prompt, and the prewarmed child, stable."""
        if not self.messages:
            self.add_system(text)
        elif text:
            note = TextContent(f"<{role}-message>\n{text}\n</{role}-message>")
            last = self.messages[-1]
            if isinstance(last, UserMessage) and not self._open:
                self.messages[-1] = UserMessage((*last.content, note))
            else:
                self.add_user([note], "messages")

    def add_user(self, content: Sequence[UserContent], path: str) -> None:
        self._expect_answered(path)
        self.messages.append(UserMessage(tuple(content)))

    def add_assistant(self, content: Sequence[AssistantContent], path: str) -> None:
        self._expect_answered(path)
        if not self.messages:
            raise invalid(path, "the conversation must start with a user message")
        if not content:
            return
        ids = [part.id for part in content if isinstance(part, ToolCall)]
        if len(set(ids)) != len(ids):
            raise invalid(path, "two tool calls share one id")
        self.messages.append(AssistantMessage(tuple(content)))
        self._open = {part.id: part.name for part in content if isinstance(part, ToolCall)}
        self._unanswered_at = path

    def add_tool_result(self, call_id: Any, content: Sequence[UserContent], is_error: bool, path: str) -> None:
        if not isinstance(call_id, str) or call_id not in self._open:
            raise invalid(path, "this tool result has no matching tool call in the assistant message just before it")
        name = self._open.pop(call_id)
        self.messages.append(ToolResultMessage(call_id, name, tuple(content), is_error))

    def _expect_answered(self, path: str) -> None:
        if self._open:
            raise invalid(path, f"the tool calls of {self._unanswered_at} must be answered by tool results first")
        self._open = {}

    def build(self, tools: Sequence[ToolDefinition], choice: ToolChoice = ToolChoice()) -> Context:
        if not self.messages:
            raise invalid("messages", "at least one message is required")
        if self._open:
            raise invalid("messages", f"the tool calls of {self._unanswered_at} have no results")
        if isinstance(self.messages[-1], AssistantMessage):
            raise invalid("messages", "the last message must be from the user or carry tool results "
                                      "(Claude Code cannot continue an assistant message)")
        names = [tool.name for tool in tools]
        if len(set(names)) != len(names):
            raise invalid("tools", "two tools share one name")
        system = list(self.system)
        if choice.mode == "none":
            tools = ()
        elif choice.mode == "any":
            if not tools:
                raise invalid("tool_choice", "a tool must be called but no tools are given")
            system.append(_MUST_CALL_ANY)
        elif choice.mode == "tool":
            tools = tuple(tool for tool in tools if tool.name == choice.name)
            if not tools:
                raise invalid("tool_choice", "names a tool that is not in tools")
            system.append(f"In this answer you must call the tool {choice.name}.")
        return Context("\n\n".join(system), tuple(self.messages), tuple(tools))


# --- provider errors -> API errors -------------------------------------------------------

SIGN_IN = ("Claude Code is not signed in (or its sign-in was refused): run `claude auth login` "
           "as the user who runs hostlink serve, or give it CLAUDE_CODE_OAUTH_TOKEN from `claude setup-token`")


def provider_error(error: ErrorEvent) -> ApiError:
    """The API error for a failed provider request (its messages are written to be shown)."""
    code = error.code
    if code in ("invalid_request", "context_length_exceeded"):
        return ApiError(400, "invalid_request", error.message)
    if code == "not_found":
        return ApiError(404, "not_found", error.message)
    if code == "too_large":
        return ApiError(413, "too_large", error.message)
    if code in ("auth_failed", "not_signed_in"):
        return ApiError(401, "authentication", SIGN_IN)
    if code in ("rate_limited", "quota_exceeded"):
        wait = None if error.resets_at is None else max(1, error.resets_at - int(time.time()))
        return ApiError(429, "rate_limit", error.message, retry_after=wait, resets_at=error.resets_at)
    if code == "plan_refused":  # the plan's settings, not a limit that lifts: a client must not retry
        return ApiError(403, "permission", error.message)
    if code == "provider_unavailable":
        return ApiError(529, "overloaded", error.message)
    if code == "unavailable":
        return ApiError(503, "api", error.message)
    if code == "timeout":
        return ApiError(504, "api", error.message)
    return ApiError(500, "api", error.message)


def usage_numbers(message: AssistantMessage) -> tuple[int, int, int, int]:
    usage = message.usage
    return usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens
