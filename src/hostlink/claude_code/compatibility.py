"""Which `claude` CLI hostlink uses, which versions it was verified against, and what
they did with model aliases.

Flags are not advisory: every child's argv is checked against the CLI's `--help` and
version first (`FLAGS`, `hostlink.claude_code.preflight`). The verified range is:
a version outside it is reported (doctor, and with any protocol refusal) but not refused,
because the runtime checks of the init record and the stream protocol fail closed on any
real mismatch.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

VERIFIED_MIN = (2, 1, 225)
VERIFIED_MAX = (2, 1, 332)
"""Inclusive; measured (see `MEASURED`): the oldest version that passed the real-CLI tests,
and the version `package.json` pins for CI."""


@dataclass(frozen=True)
class Measurement:
    """One version run through `scripts/verify-claude-cli` (or, where `passed` is None,
    only its `--help` read, to bisect a flag)."""

    version: tuple[int, int, int]
    passed: bool | None
    notes: str


MEASURED = (
    Measurement((2, 1, 332), True, "the pin: 137 of 137 real-CLI tests"),
    Measurement((2, 1, 300), True, "137 of 137; no relevant difference from 2.1.332 found"),
    Measurement((2, 1, 259), None, "the first with --permission-prompts in --help"),
    Measurement((2, 1, 258), None, "no --permission-prompts"),
    Measurement((2, 1, 250), True, "137 of 137; no --permission-prompts (dropped); init's mcp_servers have no "
                "'source'; a message an API error cut off ends with a message_delta without a stop reason "
                "(an interrupted stream)"),
    Measurement((2, 1, 225), True, "137 of 137; as 2.1.250, but a message an API error cut off ends with an API "
                "error result (provider_unavailable)"),
    Measurement((2, 1, 224), False, "its initialize control answer has no current_permission_mode, so dontAsk "
                "cannot be confirmed before the prompt: every request is refused"),
    Measurement((2, 1, 222), False, "as 2.1.224, and init lists none of the proposal server's tools"),
    Measurement((2, 1, 200), False, "as 2.1.222"),
    Measurement((2, 1, 150), False, "as 2.1.222, and init lists built-in skills despite --disable-slash-commands"),
    Measurement((2, 1, 100), False, "as 2.1.150"),
)
"""The versions measured against a local fake API (newest first) and what differed, on the
way hostlink uses the CLI. `--help` of 2.1.50 lacks only --permission-prompts of the listed
flags; 2.0.77 lacks --effort too (neither was run)."""

MODEL_RESOLUTIONS: dict[str, str] = {
    "opus": "claude-opus-5-5",
    "sonnet": "claude-sonnet-5-5",
    "haiku": "claude-haiku-5-5",
    "fable": "claude-fable-5-2",
}
"""What `claude --model <alias>` requested from the first-party API with 2.1.332."""

_VERSION = re.compile(r"(\d{1,6})\.(\d{1,6})\.(\d{1,6})")


def parse_version(text: str) -> tuple[int, int, int] | None:
    """The first `X.Y.Z` in `claude --version` output, e.g. `2.1.332 (Claude Code)`."""
    match = _VERSION.search(text[:200])
    if match is None:
        return None
    major, minor, patch = (int(part) for part in match.groups())
    return major, minor, patch


def show(version: tuple[int, int, int]) -> str:
    return ".".join(str(part) for part in version)


def verified_range() -> str:
    if VERIFIED_MIN == VERIFIED_MAX:
        return show(VERIFIED_MIN)
    return f"{show(VERIFIED_MIN)} to {show(VERIFIED_MAX)}"


def check_version(text: str) -> tuple[bool, str]:
    """Whether `claude --version` output names a verified version, and a message saying so."""
    version = parse_version(text)
    if version is None:
        return False, "could not read a version from `claude --version`"
    shown = show(version)
    if VERIFIED_MIN <= version <= VERIFIED_MAX:
        return True, f"claude {shown} is a verified version"
    side = "older" if version < VERIFIED_MIN else "newer"
    return False, (
        f"claude {shown} is {side} than the verified range ({verified_range()}); "
        "requests still validate the CLI's protocol and fail closed on a mismatch"
    )


def find_claude(environ: Mapping[str, str] | None = None) -> str | None:
    """The `claude` executable on `PATH`, or None.

    A PATH scan only (no subprocess), so registration can afford it. hostlink takes the CLI
    from PATH and nowhere else: put the one you want first on PATH.
    """
    env = os.environ if environ is None else environ
    return shutil.which("claude", path=env.get("PATH", os.defpath))


@dataclass(frozen=True)
class CliFlag:
    """One option hostlink passes to `claude`, and what to do on a CLI without it.

    `values` is how many argv items follow the flag. `since` is the oldest measured
    version that has it (None: every measured version). A `listed` flag is checked against
    `claude --help`; the CLI hides some options from its help, and those are checked by
    version. `fallback` says why the flag may be dropped on a CLI that lacks it; without
    one, a CLI that lacks it is refused before any child starts.
    """

    values: int
    since: tuple[int, int, int] | None = None
    listed: bool = True
    fallback: str | None = None


OLDEST_MEASURED = (2, 1, 100)
"""The oldest version whose `--help` and requests were measured (see `MEASURED`)."""

# Per flag, whether a CLI without it can be served. Only --permission-prompts can: every
# other one either keeps unmanaged customizations out (--setting-sources, --settings,
# --disable-slash-commands, --strict-mcp-config, --no-session-persistence), is the
# proposal-only boundary (--permission-mode, --tools, --allowedTools, --mcp-config,
# --max-turns), is the protocol hostlink speaks (-p, --input-format, --output-format,
# --include-partial-messages, --verbose), or is the answer the user asked for (--model,
# --effort, --system-prompt-file). Without one of those the request is refused.
FLAGS: dict[str, CliFlag] = {
    "-p": CliFlag(0),
    "--setting-sources": CliFlag(1),
    "--settings": CliFlag(1),
    "--disable-slash-commands": CliFlag(0),
    "--strict-mcp-config": CliFlag(0),
    "--permission-mode": CliFlag(1),
    # Who answers a permission prompt; "none" denies it in the CLI. Safe to drop: in dontAsk
    # nothing that is not allowed by rule prompts at all; a permission request that still
    # came would reach hostlink as a control_request, which every conversation refuses (it
    # fails the request, never answers "allow"); and the proposal server refuses tools/call.
    "--permission-prompts": CliFlag(1, since=(2, 1, 259), fallback="dontAsk already denies what is not allowed"),
    "--no-session-persistence": CliFlag(0),
    "--max-turns": CliFlag(1, listed=False),
    "--mcp-config": CliFlag(1),
    "--tools": CliFlag(1),
    "--allowedTools": CliFlag(1),
    "--model": CliFlag(1),
    "--effort": CliFlag(1),
    "--input-format": CliFlag(1),
    "--output-format": CliFlag(1),
    "--include-partial-messages": CliFlag(0),
    "--verbose": CliFlag(0),
    "--system-prompt-file": CliFlag(1, listed=False),
}
"""Every option the argv builders (`hostlink.claude_code.process.build_argv`) may pass.
A new option gets a row here; a test fails for an option without one."""


class MissingFlag(Exception):
    """The CLI lacks a flag hostlink cannot do without; the message names it and the fix."""

    def __init__(self, flag: str, version: tuple[int, int, int] | None) -> None:
        spec = FLAGS[flag]
        shown = f"claude {show(version)}" if version is not None else "this claude"
        has = f"claude {show(spec.since or OLDEST_MEASURED)} and later have it"
        super().__init__(
            f"{shown} does not support {flag}, which hostlink needs ({has}): run `claude update` "
            f"(hostlink is verified with claude {verified_range()})"
        )
        self.flag = flag


def argv_flags(argv: Sequence[str]) -> list[str]:
    """The flags of a request argv (after the executable), read with `FLAGS`' arities.

    Raises ValueError for an option without a row in `FLAGS`.
    """
    flags = []
    index = 1
    while index < len(argv):
        flag = argv[index]
        if flag not in FLAGS:
            raise ValueError(f"{flag!r} has no row in compatibility.FLAGS")
        flags.append(flag)
        index += 1 + FLAGS[flag].values
    return flags


def has_flag(flag: str, version: tuple[int, int, int] | None, listed: frozenset[str]) -> bool:
    """Whether a CLI with this version and `--help` listing has `flag`."""
    spec = FLAGS[flag]
    if spec.listed:
        return flag in listed
    oldest = spec.since or OLDEST_MEASURED
    return version is not None and version >= oldest


def adapt_argv(argv: Sequence[str], version: tuple[int, int, int] | None, listed: frozenset[str]) -> list[str]:
    """`argv` for this CLI: flags it lacks dropped where `FLAGS` allows it.

    Raises `MissingFlag` for the first missing flag that cannot be dropped.
    """
    adapted = list(argv[:1])
    index = 1
    for flag in argv_flags(argv):
        end = index + 1 + FLAGS[flag].values
        if has_flag(flag, version, listed):
            adapted += argv[index:end]
        elif FLAGS[flag].fallback is None:
            raise MissingFlag(flag, version)
        index = end
    return adapted


_HELP_OPTION = re.compile(r"^ {1,8}(-[^<\[]*?)(?: <| \[| {2,}|$)")
_OPTION_NAME = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*")


def listed_flags(help_text: str) -> frozenset[str]:
    """The option names `claude --help` lists (`-p, --print` gives both names)."""
    names: set[str] = set()
    for line in help_text.splitlines():
        match = _HELP_OPTION.match(line)
        if match is not None:
            names.update(_OPTION_NAME.findall(match.group(1)))
    return frozenset(names)


def early_exit_advice(version: str | None, stderr: Sequence[str]) -> str:
    """What to tell a user whose `claude` exited before it was initialized: its own last
    stderr lines (already bounded and sanitized) and what to do about them."""
    said = f"it said: {' | '.join(stderr)}" if stderr else "it wrote nothing on stderr"
    shown = f"claude {version}" if version else "this claude"
    if any("unknown option" in line for line in stderr):
        fix = f"{shown} does not accept an option hostlink passes: run `claude update`"
    else:
        fix = f"run `claude` in a terminal to see the problem, or `claude update` ({shown} is installed)"
    return f"{said}; {fix} (hostlink is verified with claude {verified_range()})"


def unverified_hint(version: str | None) -> str | None:
    """For a CLI that failed a protocol check: a hint when its version is outside the verified
    range (a likely cause), None inside it."""
    parsed = parse_version(version) if version else None
    if parsed is None or VERIFIED_MIN <= parsed <= VERIFIED_MAX:
        return None
    if parsed < VERIFIED_MIN:
        return f"claude {version} is older than the verified range ({verified_range()}): run `claude update`"
    return f"claude {version} is newer than the verified range ({verified_range()}): look for a newer hostlink"
