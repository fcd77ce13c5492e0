"""Structured output (Chat `response_format`, Responses `text.format`) through an output tool.

Why a tool: Claude Code's own `--json-schema` has the CLI run a `StructuredOutput` tool
itself in a second turn, which the provider's propose-and-stop mode (one turn, nothing
executed) cannot allow. A tool offered through the proposal server works like any client
tool: Claude proposes it, its arguments arrive as a strict JSON object, and the endpoint
turns that proposal into the message content (JSON text, no fences). The answer is checked
against the schema; one that does not match is an error, never content. A schema whose root
is not an object is wrapped in `{"value": …}` for the tool and unwrapped after.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, replace
from typing import Any

import jsonschema_rs

from hostlink.host import (
    AssistantMessage,
    Context,
    Done,
    ErrorEvent,
    StreamEvent,
    TextContent,
    TextDelta,
    ToolCall,
    ToolCallEvent,
    ToolDefinition,
)
from hostlink.serve.core import invalid

TOOL_NAME = "respond_with_json"
_FENCED = re.compile(r"\s*```(?:json)?\s*(?P<body>.*?)\s*```\s*", re.DOTALL)


@dataclass(frozen=True)
class OutputFormat:
    """What the answer must be: any JSON object (`schema` None) or JSON matching `schema`."""

    name: str
    schema: dict[str, Any] | None
    wrapped: bool  # the schema's root is not an object: the tool takes {"value": ...}
    validator: Any = None

    @classmethod
    def of(cls, name: str, schema: Any, path: str) -> OutputFormat:
        if schema is None:
            return cls(name, None, False)
        if not isinstance(schema, dict):
            raise invalid(f"{path}.schema", "expected an object (a JSON Schema)")
        try:
            validator = jsonschema_rs.validator_for(schema)
        except (ValueError, jsonschema_rs.ValidationError) as error:
            raise invalid(f"{path}.schema", f"not a valid JSON Schema ({str(error).splitlines()[0][:120]})") from None
        return cls(name, schema, schema.get("type") != "object", validator)

    def tool(self) -> ToolDefinition:
        schema = self.schema if self.schema is not None else {"type": "object"}
        if self.wrapped:
            schema = {"type": "object", "properties": {"value": schema}, "required": ["value"]}
        what = f"the {self.name!r} schema" if self.schema is not None else "a JSON object"
        return ToolDefinition(TOOL_NAME, f"Give your final answer: its arguments are the answer, {what}.", schema)


def apply(context: Context, output: OutputFormat | None) -> Context:
    """The context with the output tool offered and Claude told to answer through it."""
    if output is None:
        return context
    if any(tool.name == TOOL_NAME for tool in context.tools):
        raise invalid("tools", f"the tool name {TOOL_NAME!r} is reserved for structured output")
    rule = (f"Give your final answer only by calling the tool {TOOL_NAME}: its arguments are the answer. "
            "Never write the answer as text.")
    system = f"{context.system_prompt}\n\n{rule}" if context.system_prompt else rule
    return replace(context, system_prompt=system, tools=(*context.tools, output.tool()),
                   settings=replace(context.settings, answer_tool=TOOL_NAME))


class SchemaViolation(Exception):
    pass


def _answer(output: OutputFormat, message: AssistantMessage) -> str:
    """The JSON text of the answer: the output tool's arguments, or text that is JSON."""
    call = next((part for part in message.content if isinstance(part, ToolCall) and part.name == TOOL_NAME), None)
    if call is not None:
        value: Any = dict(call.arguments)
        if output.wrapped:
            if "value" not in value:
                raise SchemaViolation("the answer is missing")
            value = value["value"]
    else:
        text = "".join(part.text for part in message.content if isinstance(part, TextContent))
        fenced = _FENCED.fullmatch(text)
        try:
            value = json.loads(fenced["body"] if fenced else text)
        except ValueError:
            raise SchemaViolation("the answer is not JSON") from None
    if output.validator is None:
        if not isinstance(value, dict):
            raise SchemaViolation("the answer is not a JSON object")
    else:
        error = next(output.validator.iter_errors(value), None)
        if error is not None:
            where = "/".join(str(step) for step in error.instance_path) or "the root"
            rule = "/".join(str(step) for step in error.schema_path[-2:])
            raise SchemaViolation(f"at {where} it breaks the schema's rule {rule}")
    return json.dumps(value, ensure_ascii=False)


async def transform(events: AsyncIterator[StreamEvent], output: OutputFormat | None) -> AsyncGenerator[StreamEvent]:
    """Provider events with the output tool's proposal turned into the answer's text.

    With an output format, text is held back until the end (only JSON that matched is sent);
    proposals of the client's own tools pass through unchanged.
    """
    if output is None:
        async for event in events:
            yield event
        return
    async for event in events:
        if isinstance(event, TextDelta) or (isinstance(event, ToolCallEvent) and event.tool_call.name == TOOL_NAME):
            continue
        if isinstance(event, Done):
            message = event.message
            calls = [part for part in message.content if isinstance(part, ToolCall) and part.name != TOOL_NAME]
            if calls:
                content = tuple(part for part in message.content if not isinstance(part, (TextContent, ToolCall)))
                yield replace(event, message=replace(message, content=(*content, *calls)))
                continue
            try:
                text = _answer(output, message)
            except SchemaViolation as violation:
                yield ErrorEvent(f"Claude's answer does not match the requested format ({output.name}): {violation}",
                                 code="schema_violation")
                continue
            thinking = tuple(part for part in message.content if not isinstance(part, (TextContent, ToolCall)))
            stop = "stop" if message.stop_reason == "toolUse" else message.stop_reason
            yield TextDelta(text)
            yield replace(event, message=replace(message, content=(*thinking, TextContent(text)), stop_reason=stop))
            continue
        yield event
