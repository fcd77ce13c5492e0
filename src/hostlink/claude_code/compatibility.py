"""Which ``claude`` CLI hostlink uses, which versions it was verified against, and what
they did with model aliases.

Version metadata is advisory: a version outside the range is reported (doctor) but not
refused, because the runtime checks of the init record and the stream protocol fail closed
on any real mismatch.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping

VERIFIED_MIN = (2, 1, 332)
VERIFIED_MAX = (2, 1, 332)
"""Inclusive; the version ``package.json`` pins for the tests."""

MODEL_RESOLUTIONS: dict[str, str] = {
    "opus": "claude-opus-5-5",
    "sonnet": "claude-sonnet-5-5",
    "haiku": "claude-haiku-5-5",
    "fable": "claude-fable-5-2",
}
"""What ``claude --model <alias>`` requested from the first-party API with 2.1.332."""

_VERSION = re.compile(r"(\d{1,6})\.(\d{1,6})\.(\d{1,6})")


def parse_version(text: str) -> tuple[int, int, int] | None:
    """The first ``X.Y.Z`` in ``claude --version`` output, e.g. ``2.1.332 (Claude Code)``."""
    match = _VERSION.search(text[:200])
    if match is None:
        return None
    major, minor, patch = (int(part) for part in match.groups())
    return major, minor, patch


def _show(version: tuple[int, int, int]) -> str:
    return ".".join(str(part) for part in version)


def verified_range() -> str:
    if VERIFIED_MIN == VERIFIED_MAX:
        return _show(VERIFIED_MIN)
    return f"{_show(VERIFIED_MIN)} to {_show(VERIFIED_MAX)}"


def check_version(text: str) -> tuple[bool, str]:
    """Whether ``claude --version`` output names a verified version, and a message saying so."""
    version = parse_version(text)
    if version is None:
        return False, "could not read a version from `claude --version`"
    shown = _show(version)
    if VERIFIED_MIN <= version <= VERIFIED_MAX:
        return True, f"claude {shown} is a verified version"
    side = "older" if version < VERIFIED_MIN else "newer"
    return False, (
        f"claude {shown} is {side} than the verified range ({verified_range()}); "
        "requests still validate the CLI's protocol and fail closed on a mismatch"
    )


def find_claude(environ: Mapping[str, str] | None = None) -> str | None:
    """The ``claude`` executable on ``PATH``, or None.

    A PATH scan only (no subprocess), so registration can afford it. hostlink takes the CLI
    from PATH and nowhere else: put the one you want first on PATH.
    """
    env = os.environ if environ is None else environ
    return shutil.which("claude", path=env.get("PATH", os.defpath))
