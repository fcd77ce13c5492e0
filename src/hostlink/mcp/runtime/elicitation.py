"""MCP elicitation (form mode) through the host's `ask`: opt-in per server
(`"elicitation": true`) and offered only when the host can ask someone.

The server's form is checked before the person sees it: a flat object whose properties are
strings (optionally a format), numbers, integers, booleans or choices — what MCP allows —
with every text sanitized and bounded. Choices keep the shape the server gave them (SEP-1330),
so a host can show their titles: one of an `enum` (titled by a legacy `enumNames`, or not) or
of a `oneOf` of titled `const`s; several of an `array` whose `items` are an `enum` or an
`anyOf` of titled `const`s, with `minItems` / `maxItems`. A field that asks for a secret (a `password`
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
_TYPES = ("string", "number", "integer", "boolean", "array")
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
        raise FormRefused(f"field {one_line(str(name), 64)!r} is not a text, number, yes/no or choice field")
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
        field.update(_choices(name, spec))
        if spec.get("format") in _FORMATS:
            field["format"] = spec["format"]
        field.update(_bounds(spec, "minLength", "maxLength"))
    elif spec["type"] == "array":
        items = spec.get("items")
        picked = _choices(name, items) if isinstance(items, Mapping) else {}
        if not picked or "enumNames" in picked:
            raise FormRefused(f"field {name!r} is a list of something other than choices")
        field["items"] = {"type": "string", **picked} if "enum" in picked else picked
        field.update(_bounds(spec, "minItems", "maxItems"))
    elif spec["type"] in ("number", "integer"):
        field.update(_bounds(spec, "minimum", "maximum", numbers=True))
    default = spec.get("default")
    if default is not None and _fits(default, field):
        field["default"] = default
    return field


def _choices(name: str, spec: Mapping[str, Any]) -> dict[str, Any]:
    """A field's choices in the server's shape, sanitized: `enum` (with `enumNames` when given),
    or `oneOf` / `anyOf` of `{const, title}`; {} for a field without choices."""
    if "enum" in spec:
        values = _plain(name, spec["enum"])
        names = spec.get("enumNames")
        if names is None:
            return {"enum": values}
        if not isinstance(names, list) or len(names) != len(values) or not all(isinstance(n, str) for n in names):
            raise FormRefused(f"field {name!r} has choice names that do not match its choices")
        return {"enum": values, "enumNames": [one_line(title, TEXT_CHARS) for title in names]}
    key = "oneOf" if "oneOf" in spec else "anyOf" if "anyOf" in spec else None
    if key is None:
        return {}
    options = spec[key]
    if not isinstance(options, list) or not all(isinstance(option, Mapping) for option in options):
        raise FormRefused(f"field {name!r} has choices that are not short plain texts")
    values = _plain(name, [option.get("const") for option in options])
    titles = [_text(option.get("title")) or value for option, value in zip(options, values, strict=True)]
    return {key: [{"const": value, "title": title} for value, title in zip(values, titles, strict=True)]}


def _plain(name: str, choices: Any) -> list[str]:
    if not isinstance(choices, list) or not choices or len(choices) > MAX_CHOICES \
            or not all(isinstance(c, str) and c and one_line(c, TEXT_CHARS) == c for c in choices) \
            or len(set(choices)) != len(choices):
        raise FormRefused(f"field {name!r} has choices that are not short plain texts")
    return list(choices)


def _bounds(spec: Mapping[str, Any], *keys: str, numbers: bool = False) -> dict[str, Any]:
    """The field's bounds among `keys`: counts (whole, not negative), or any numbers."""
    kinds = (int, float) if numbers else int
    return {key: spec[key] for key in keys if isinstance(spec.get(key), kinds) and not isinstance(spec[key], bool)
            and (numbers or spec[key] >= 0)}


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
