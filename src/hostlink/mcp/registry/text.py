"""Registry text that becomes part of a command line, a header, an environment value or a URL.

In a command line it may not carry what a shell (sh, or cmd.exe, which runs `npx` and other
batch files on Windows) or hostlink's own `${VAR}` expansion would act on; elsewhere, what the
expansion would act on. Such text is refused, not escaped: a record that needs it is not one
to run.
"""

from __future__ import annotations

import re
from typing import Any

from hostlink.host import text_problem
from hostlink.mcp.registry.client import RegistryError

UNSAFE_IN_ARGV = re.compile(r"[$`;|&<>()^%!\"'\\]")
UNSAFE_IN_VALUE = re.compile(r"[$]")
MAX_TEXT = 1000


def registry_text(value: Any, where: str, *, argv: bool = False) -> str:
    """A string from the registry that becomes part of a command line (`argv`), a header, an
    environment value or a URL."""
    if not isinstance(value, str) or not value or len(value) > MAX_TEXT:
        raise RegistryError(f"{where} must be a string of 1 to {MAX_TEXT} characters")
    if text_problem(value) is not None or not value.isprintable():
        raise RegistryError(f"{where} contains control characters")
    unsafe = (UNSAFE_IN_ARGV if argv else UNSAFE_IN_VALUE).search(value)
    if unsafe is not None:
        raise RegistryError(f"{where} contains {unsafe.group()!r}, which a shell or ${{VAR}} expansion would "
                            "act on; hostlink does not write it into a command")
    if value.startswith("-") and where.endswith("identifier"):
        raise RegistryError(f"{where} must not start with -")
    return value


def checked_argv(values: list[Any], where: str, *, allow: re.Pattern[str]) -> list[str]:
    """`values` as command-line text, each checked once the references `allow` matches are set aside."""
    for value in values:
        if not (isinstance(value, str) and value and not allow.sub("", value)):  # not a reference alone
            registry_text(allow.sub("", value) if isinstance(value, str) else value, where, argv=True)
    return [str(value) for value in values]
