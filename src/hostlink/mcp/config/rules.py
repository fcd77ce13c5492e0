"""The parts of the server-entry schema that need no pydantic: server and variable names,
the error a broken entry raises, and how a config key appears in a message. Reading a
configuration that has no file pays for nothing more."""

from __future__ import annotations

import re

NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
ENV_NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class SchemaError(ValueError):
    """A server entry breaks the schema; `field` is the dotted config key path."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}" if field else problem)
        self.field = field
        self.problem = problem


def safe_key(key: str | int) -> str:
    """A config key for a message: plain when it is a simple name, else an escaped, bounded repr."""
    text = str(key)
    return text if NAME_PATTERN.fullmatch(text) else ascii(text[:64])
