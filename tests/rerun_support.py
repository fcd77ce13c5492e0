"""When a test runs once more: only when it failed on a named fault of the machine under it (the
shared keyring daemon gone, Wine failing to start a process), never on anything hostlink did.
Stdlib and pytest only: the Windows lane's conftest uses it too."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest


def rerun_once_on(fault: str) -> pytest.MarkDecorator:
    """pytest-rerunfailures' mark: one more run when `fault` (a regex) is in the failure's
    "Type: message" or in that of an exception below it: its cause, its context, or a member of an
    exception group (a task group reports its tasks' failures that way, which the plugin's own
    `only_rerun` does not look into)."""
    return pytest.mark.flaky(reruns=1, condition=_raised(re.compile(fault)))


def _raised(fault: re.Pattern[str]) -> Callable[[BaseException | None], bool]:
    def matches(error: BaseException | None) -> bool:
        pending, seen = [error], set()
        while pending:
            exc = pending.pop()
            if exc is None or id(exc) in seen:
                continue
            seen.add(id(exc))
            if fault.search(f"{type(exc).__name__}: {exc}"):
                return True
            pending += [exc.__cause__, exc.__context__, *getattr(exc, "exceptions", ())]
        return False
    return matches
