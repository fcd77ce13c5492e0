"""How a configured command and its arguments become what is started.

POSIX: as given (the system searches `PATH`). Windows: the name is found as Windows finds it,
`PATH` with each `PATHEXT` extension, so `npx` is the `npx.cmd` shim npm installs. A batch
file cannot be started directly: it runs as `cmd.exe /c "<line>"`, and since cmd.exe reads
its line as a script, every token is quoted and an argument holding a character cmd.exe
would interpret (a quote, `%`, `!`, `^`, `&`, `|`, `<`, `>`, parentheses, a line break) is
refused, naming the characters, rather than escaped.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Mapping, Sequence

CMD_SPECIAL = frozenset('"%!^&|<>()\r\n')
PATH_SPECIAL = frozenset('"%!\r\n')  # inside quotes cmd.exe still reads these in a path
BATCH_SUFFIXES = (".cmd", ".bat")

Command = list[str] | str  # a str is one cmd.exe line (started through the shell)


class CommandRefused(ValueError):
    """The command cannot be started safely on this system; the message names why."""


def _named(characters: set[str]) -> str:
    return " ".join(repr(c) if c in "\r\n" else c for c in sorted(characters))


def windows_command(command: str, args: Sequence[str], found: str | None) -> Command:
    """The Windows form of `command args`, `found` being where the `PATH` search found it."""
    if found is None or not found.lower().endswith(BATCH_SUFFIXES):
        return [found or command, *args]
    if bad := set(found) & PATH_SPECIAL:
        raise CommandRefused(f"the batch file's path holds characters cmd.exe would interpret: {_named(bad)}")
    for index, arg in enumerate(args):
        if bad := set(arg) & CMD_SPECIAL:
            raise CommandRefused(f"argument {index + 1} holds characters cmd.exe would interpret "
                                 f"when it runs a batch file: {_named(bad)}")
    return " ".join(f'"{token}"' for token in (found, *args))


def resolve(command: str, args: Sequence[str], environ: Mapping[str, str]) -> Command:
    """What to start for `command args` on this system (see the module docstring)."""
    if sys.platform == "win32":
        return windows_command(command, args, shutil.which(command, path=environ.get("PATH")))
    return [command, *args]
