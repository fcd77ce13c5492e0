"""Asking the person at the terminal, for the terminal hosts (the CLI and llm).

A server's question is shown on stderr as the server's words, then answered field by field
on stdin: each field with its type, its choices (numbered, by their titles when the server
gave some) and its default (Enter takes it); a value that does not fit is asked again with
the reason. A choice is picked by its number or its value; several (a multi-select field) as
a comma-separated list of them. Ctrl-D cancels. Only when both stdin and
stderr are a terminal: otherwise the host cannot ask, and servers are not offered the
capability at all.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Mapping
from typing import Any, TextIO

from hostlink.host import Answer, Ask, Question
from hostlink.host.output import counted

_YES = ("y", "yes", "true", "1")
_ONE_AT_A_TIME = threading.Lock()  # two servers asking at once take turns at the terminal
_NO = ("n", "no", "false", "0")


class _Ended(Exception):
    """The person closed the input (Ctrl-D)."""


def terminal_ask(stdin: TextIO | None = None, stderr: TextIO | None = None) -> Ask | None:
    """The host's `ask` on this terminal, or None when there is no terminal to ask on."""
    stdin, stderr = stdin or sys.stdin, stderr or sys.stderr
    if not (stdin.isatty() and stderr.isatty()):
        return None

    async def ask(question: Question) -> Answer:
        import anyio

        return await anyio.to_thread.run_sync(ask_here, question, stdin, stderr, abandon_on_cancel=True)

    return ask


def ask_here(question: Question, stdin: TextIO, stderr: TextIO) -> Answer:
    """One question, asked and answered on `stdin`/`stderr`."""
    with _ONE_AT_A_TIME:
        return _ask(question, stdin, stderr)


def _ask(question: Question, stdin: TextIO, stderr: TextIO) -> Answer:
    def say(text: str) -> None:
        print(text, file=stderr, flush=True)

    say(f"\nMCP server {question.asker!r} asks (its words, not hostlink's):")
    for line in question.message.splitlines() or [""]:
        say(f"  | {line}")
    try:
        choice = _read(stdin, stderr, "Answer it? [y]es, [n]o (decline), [c]ancel: ",
                       lambda text: text.lower()[:1] if text.lower()[:1] in ("y", "n", "c") else None,
                       "type y, n or c")
        if choice != "y":
            return Answer("decline" if choice == "n" else "cancel")
        content: dict[str, Any] = {}
        required = set(question.fields.get("required", []))
        for name, field in question.fields["properties"].items():
            value = _ask_field(stdin, stderr, name, field, name in required)
            if value is not None:
                content[name] = value
    except _Ended:
        say("(cancelled)")
        return Answer("cancel")
    return Answer("accept", content)


def _ask_field(stdin: TextIO, stderr: TextIO, name: str, field: Mapping[str, Any], required: bool) -> Any:
    label = field.get("title") or name
    hints = [_kind(field)]
    if "default" in field:
        hints.append(f"Enter: {_shown(field['default'])}")
    elif not required:
        hints.append("Enter: leave empty")
    if field.get("description"):
        print(f"  {field['description']}", file=stderr, flush=True)

    def parse(text: str) -> Any:
        if text == "":
            if "default" in field:
                return field["default"]
            if required:
                raise ValueError("an answer is required")
            return _SKIP
        return _value(text, field)

    value = _read(stdin, stderr, f"{label} ({'; '.join(hints)}): ", parse, None)
    return None if value is _SKIP else value


_SKIP = object()  # an optional field left empty


def _read(stdin: TextIO, stderr: TextIO, prompt: str, parse: Any, again: str | None) -> Any:
    """Ask until `parse` takes the line (None or ValueError: ask again, saying why)."""
    while True:
        print(prompt, end="", file=stderr, flush=True)
        line = stdin.readline()
        if not line:
            print(file=stderr, flush=True)
            raise _Ended
        try:
            value = parse(line.strip())
        except ValueError as problem:
            print(f"  {problem}; try again (Ctrl-D cancels)", file=stderr, flush=True)
            continue
        if value is None:
            print(f"  {again}; try again (Ctrl-D cancels)", file=stderr, flush=True)
            continue
        return value


def _value(text: str, field: Mapping[str, Any]) -> Any:
    kind = field["type"]
    if kind == "boolean":
        if text.lower() in _YES:
            return True
        if text.lower() in _NO:
            return False
        raise ValueError("answer y or n")
    if kind in ("integer", "number"):
        try:
            number: float | int = int(text) if kind == "integer" else float(text)
        except ValueError:
            raise ValueError("a whole number is needed" if kind == "integer" else "a number is needed") from None
        if "minimum" in field and number < field["minimum"]:
            raise ValueError(f"at least {field['minimum']} is needed")
        if "maximum" in field and number > field["maximum"]:
            raise ValueError(f"at most {field['maximum']} is needed")
        return number
    if kind == "array":
        return _picks(text, field)
    if _options(field):
        return _pick(text, _options(field))
    if "minLength" in field and len(text) < field["minLength"]:
        raise ValueError(f"at least {counted(field['minLength'], 'character')} {_are(field['minLength'])} needed")
    if "maxLength" in field and len(text) > field["maxLength"]:
        raise ValueError(f"at most {counted(field['maxLength'], 'character')} {_are(field['maxLength'])} allowed")
    return text


def _are(number: int) -> str:
    return "is" if number == 1 else "are"


def _options(field: Mapping[str, Any]) -> list[tuple[str, str]]:
    """A choice field's (value, title) pairs in the server's order; [] for other fields."""
    if field.get("type") == "array":
        field = field.get("items") or {}
    if "enum" in field:
        return list(zip(field["enum"], field.get("enumNames") or field["enum"], strict=True))
    options = field.get("oneOf") or field.get("anyOf") or []
    return [(option["const"], option["title"]) for option in options]


def _pick(text: str, options: list[tuple[str, str]]) -> str:
    values = [value for value, _ in options]
    if text in values:
        return text
    if text.isdigit() and 1 <= int(text) <= len(values):
        return values[int(text) - 1]
    raise ValueError("pick one of the choices (its number or its value)")


def _picks(text: str, field: Mapping[str, Any]) -> list[str]:
    picked: list[str] = []
    for part in (part.strip() for part in text.split(",")):
        value = _pick(part, _options(field)) if part else None
        if value is not None and value not in picked:
            picked.append(value)
    if len(picked) < field.get("minItems", 0):
        raise ValueError(f"pick at least {field['minItems']}")
    if "maxItems" in field and len(picked) > field["maxItems"]:
        raise ValueError(f"pick at most {field['maxItems']}")
    return picked


def _kind(field: Mapping[str, Any]) -> str:
    options = _options(field)
    if options:
        listed = ", ".join(f"{index}) {title}" for index, (_, title) in enumerate(options, 1))
        return f"some of: {listed}, separated by commas" if field["type"] == "array" else f"one of: {listed}"
    return {"boolean": "y/n", "integer": "a whole number", "number": "a number"}.get(
        field["type"], f"text, {field['format']}" if field.get("format") else "text")


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "none"
    return ("yes" if value else "no") if isinstance(value, bool) else str(value)
