"""The lines a person pastes into their shell: POSIX shells (`export X=…`) on Linux and
macOS, PowerShell (`$env:X = …`) on Windows. Values are hostlink's own (URLs, paths it
made, variable names the person chose, its own command line), never untrusted text."""

from __future__ import annotations

import re
import shlex
import sys

_PLAIN = re.compile(r"[A-Za-z0-9_:./\\-]+")  # what PowerShell passes on as it is (no $, `, @, comma, quote, space)


def set_variable_line(name: str, value: str) -> str:
    """One line that sets `name` to the shell expression `value`."""
    if sys.platform == "win32":
        return f"$env:{name} = {value}"
    return f"export {name}={value}"


def literal(text: str) -> str:
    """`text` as a shell word (a URL: no quoting needed in a POSIX shell)."""
    if sys.platform == "win32":
        return f'"{text}"'
    return text


def variable_value(name: str) -> str:
    """The expression for the value of environment variable `name`."""
    if sys.platform == "win32":
        return f"$env:{name}"
    return f'"${name}"'


def file_contents(path: str) -> str:
    """The expression that expands to a file's contents."""
    if sys.platform == "win32":
        return f'(Get-Content -Raw "{path}")'
    return f'"$(cat {path})"'


def word(text: str) -> str:
    """`text` as one word of a command line (POSIX: `shlex.quote`; PowerShell: as it is when
    plain, else single-quoted, a quote doubled)."""
    if sys.platform == "win32":
        return text if _PLAIN.fullmatch(text) else "'" + text.replace("'", "''") + "'"
    return shlex.quote(text)
