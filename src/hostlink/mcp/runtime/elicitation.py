"""MCP elicitation (form mode) through the host's `ask`: opt-in per server
(`"elicitation": true`) and offered only when the host can ask someone.

The server's form is checked before the person sees it: a flat object whose properties are
strings (optionally an enum or a format), numbers, integers or booleans — what MCP allows —
with every text sanitized and bounded. A field that asks for a secret (a `password`
format, `writeOnly`, or a name such as password, secret, token or API key) is never
collected: form mode must not request sensitive data, so the request is declined and the
person told why. URL mode is declined too: hostlink never sends anyone to a server's page.
The answer is checked against the form again before it goes back to the server.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from hostlink.host import Answer, Ask, Notifier, Question
from hostlink.host.output import one_line, strip_controls

MAX_FIELDS = 20
MAX_CHOICES = 50
MESSAGE_CHARS = 2000
TEXT_CHARS = 300
_TYPES = ("string", "number", "integer", "boolean")
_FORMATS = ("email", "uri", "date", "date-time")
_SECRET = re.compile(r"pass(word|phrase|code)?|secret|token|api[-_ ]?key|private[-_ ]?key|credential", re.I)

Elicit = Callable[[Any, Any], Any]  # the SDK's elicitation callback: (context, params) -> result


class FormRefused(ValueError):
    """Why a server's form is not shown (the message is safe to show)."""


def elicitation_for(ask: Ask, notifier: Notifier) -> Callable[[str], Elicit]:
    """`for_server(name)`: the SDK callback that asks the person on behalf of server `name`."""

    def for_server(server: str) -> Elicit:
        async def elicit(context: Any, params: Any) -> Any:
            from mcp_types import ElicitRequestFormParams, ElicitResult

            if not isinstance(params, ElicitRequestFormParams):
                notifier.notify(f"MCP server {server!r} asked to send you to a web page; declined "
                                "(hostlink does not open pages for servers)", "warning")
                return ElicitResult(action="decline")
            try:
                fields = form_fields(params.requested_schema)
            except FormRefused as refused:
                notifier.notify(f"MCP server {server!r} asked a question hostlink does not ask: {refused}; declined",
                                "warning")
                return ElicitResult(action="decline")
            message = strip_controls(params.message)[:MESSAGE_CHARS]
            answer = await ask(Question(asker=server, message=message, fields=fields))
            if answer.action != "accept":
                return ElicitResult(action=answer.action)
            content = checked_answer(answer, fields)
            if content is None:
                notifier.notify(f"the answer to MCP server {server!r} did not fit its form; cancelled", "warning")
                return ElicitResult(action="cancel")
            return ElicitResult(action="accept", content=content)

        return elicit

    return for_server


def form_fields(schema: Any) -> dict[str, Any]:
    """The form as the person is asked it: a sanitized copy of `schema`; FormRefused when it
    is not a form MCP allows or asks for a secret."""
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        raise FormRefused("the form is not an object of fields")
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        raise FormRefused("the form has no fields")
    if len(properties) > MAX_FIELDS:
        raise FormRefused(f"the form has more than {MAX_FIELDS} fields")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(name, str) and name in properties for name in required):
        raise FormRefused("the form's required list names fields it does not have")
    fields = {_name(name): _field(name, spec) for name, spec in properties.items()}
    return {"type": "object", "properties": fields, "required": list(required), "additionalProperties": False}


def _name(name: Any) -> str:
    if not isinstance(name, str) or not name or strip_controls(name) != name or len(name) > 64:
        raise FormRefused("a field name is not a short plain name")
    return name


def _field(name: str, spec: Any) -> dict[str, Any]:
    if not isinstance(spec, Mapping) or spec.get("type") not in _TYPES:
        raise FormRefused(f"field {one_line(str(name), 64)!r} is not a text, number or yes/no field")
    title, description = _text(spec.get("title")), _text(spec.get("description"))
    if (spec.get("format") == "password" or spec.get("writeOnly") is True
            or any(_SECRET.search(text) for text in (name, title or ""))):
        raise FormRefused(f"field {name!r} asks for a secret, which a form must not collect "
                          "(hostlink never collects passwords, tokens or keys for a server)")
    field: dict[str, Any] = {"type": spec["type"]}
    if title:
        field["title"] = title
    if description:
        field["description"] = description
    if spec["type"] == "string":
        choices = spec.get("enum")
        if choices is not None:
            if not isinstance(choices, list) or not choices or len(choices) > MAX_CHOICES \
                    or not all(isinstance(choice, str) and strip_controls(choice) == choice for choice in choices):
                raise FormRefused(f"field {name!r} has choices that are not short plain texts")
            field["enum"] = [one_line(choice, TEXT_CHARS) for choice in choices]
        if spec.get("format") in _FORMATS:
            field["format"] = spec["format"]
        for key in ("minLength", "maxLength"):
            if isinstance(spec.get(key), int) and not isinstance(spec.get(key), bool):
                field[key] = spec[key]
    elif spec["type"] in ("number", "integer"):
        for key in ("minimum", "maximum"):
            if isinstance(spec.get(key), (int, float)) and not isinstance(spec.get(key), bool):
                field[key] = spec[key]
    default = spec.get("default")
    if default is not None and _fits(default, field):
        field["default"] = default
    return field


def _text(value: Any) -> str | None:
    return one_line(value, TEXT_CHARS) if isinstance(value, str) and value.strip() else None


def _fits(value: Any, field: Mapping[str, Any]) -> bool:
    from hostlink.mcp.runtime.validation import violations

    return not violations(field, value)


def checked_answer(answer: Answer, fields: Mapping[str, Any]) -> dict[str, Any] | None:
    """The accepted content when it fits the form (a host's own asker may be wrong), else None."""
    from hostlink.mcp.runtime.validation import violations

    content = dict(answer.content or {})
    return content if not violations(fields, content) else None
