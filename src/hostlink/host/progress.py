"""How a host watches the tool calls it runs: where their progress and the server's log
messages go, how long they may wait.

A host that can display progress (a terminal's progress line) or was given a timeout for a
call (a command's `--timeout`) sets a `CallWatch` around its `run_tool`; an
extension that learns of progress (MCP progress notifications) hands it on and waits as
long as the watch says. A context variable rather than a parameter, so that tools knowing
nothing of progress, and hosts wanting none, stay as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

# (progress, total or None, message or None): the message is the server's untrusted text.
Listener = Callable[[float, "float | None", "str | None"], None]
# (server, level, logger or None, data): a log message the server sent during the call (MCP
# `notifications/message`); all but the configured server name is the server's untrusted data.
LogListener = Callable[[str, str, "str | None", Any], None]
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")  # MCP's, lowest first


@dataclass(frozen=True)
class CallWatch:
    listener: Listener | None = None  # gets each progress report of the call
    timeout: float | None = None  # seconds the call may go without an answer or progress,
    # instead of the extension's own setting (the setup of a connection keeps that one)
    log: LogListener | None = None  # gets the server's log messages of the call; without it none are asked for
    log_level: str = "info"  # the lowest of the LOG_LEVELS that `log` wants
    detach: bool = False  # a call the server runs as a task answers with its handle at once, and the
    # task is left running when the session ends (the person collects it later)


_watch: ContextVar[CallWatch] = ContextVar("hostlink_call_watch", default=CallWatch())


@contextmanager
def watching(watch: CallWatch) -> Iterator[None]:
    """Tool calls made inside this block are watched by `watch`."""
    token = _watch.set(watch)
    try:
        yield
    finally:
        _watch.reset(token)


def current_watch() -> CallWatch:
    """The watch of the tool call running in this context (read it when the call starts:
    progress may arrive in another task)."""
    return _watch.get()
