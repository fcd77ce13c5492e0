"""Automatic restart of a crashed server, for a host whose MCP host cannot ask for one.

The design latches a server that crashed as failed until an explicit reconnect (the `mcp`
tool's action `reconnect`, `/mcp reconnect`), and every host keeps that latch but one:
`hostlink mcp serve` is driven by an MCP host that cannot type a command, so its runtime
restarts a crashed server itself, at the first use after BACKOFF seconds, at most LIMIT times
in WINDOW seconds. Past that the server stays down until the window allows another restart, or
a reconnect. Each step is said: in the error of the call that meets it, and to the person.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio

from hostlink.mcp.errors import ConnectFailed, McpError, RequestTimedOut

if TYPE_CHECKING:
    from hostlink.host import NoticeLevel, Notifier

BACKOFF = 2.0  # seconds from a crash to the first use that restarts the server
LIMIT = 3  # restarts of one server ...
WINDOW = 300.0  # ... within this many seconds
RESTARTABLE = (ConnectFailed, RequestTimedOut)  # a crash or a failed restart; never a sign-in matter


@dataclass
class _Down:
    since: float
    error: McpError  # why it went down: a crash, or the failed setup of a restart
    told: bool = False  # the person heard that it stays down


class Restarts:
    """When each server went down and was restarted, and whether a restart is due now."""

    def __init__(self, notifier: Notifier | None, *, auto: bool) -> None:
        self._notifier, self._auto = notifier, auto
        self._down: dict[str, _Down] = {}
        self._restarted: dict[str, list[float]] = {}  # times of the restarts within the window
        self.counts: Counter[tuple[str, str]] = Counter()  # (server, `restart` or `reconnect`) so far, for metrics

    def crashed(self, name: str, error: McpError) -> McpError:
        """`name` went down with `error`: the error to answer, naming how it comes back."""
        if not self._auto:
            return _noted(error, "use reconnect to start it again")
        self._down[name] = _Down(anyio.current_time(), error)
        noted = _noted(error, _when(BACKOFF))
        self._tell(str(noted), "warning")
        return noted

    def failed(self, name: str, error: McpError | None) -> McpError | None:
        """The setup of an automatic restart failed with `error`: down as from a crash, when it is one."""
        return self.crashed(name, error) if isinstance(error, RESTARTABLE) else error

    def due(self, name: str) -> bool:
        """Whether `name` is down and restarts now (said to the person). A server that is
        down but within its back-off, or past the limit, raises the error that says so."""
        down = self._down.get(name)  # never with auto off
        if down is None:
            return False
        now = anyio.current_time()
        recent = self._restarted[name] = [at for at in self._restarted.get(name, ()) if now - at < WINDOW]
        if len(recent) >= LIMIT:
            error = _noted(down.error, f"it stays down: hostlink restarted it {LIMIT} times in the last "
                                       f"{_span(WINDOW)}, the most it does; the first use in "
                                       f"{math.ceil(recent[0] + WINDOW - now)} s restarts it, or use reconnect")
            if not down.told:
                down.told = True
                self._tell(str(error), "warning")
            raise error
        if now - down.since < BACKOFF:
            raise _noted(down.error, _when(down.since + BACKOFF - now))
        recent.append(now)
        del self._down[name]
        self.counts[name, "restart"] += 1
        self._tell(f"restarting MCP server {name!r} (restart {len(recent)} of at most {LIMIT} in {_span(WINDOW)})")
        return True

    def reconnected(self, name: str) -> None:
        """A reconnect was asked for (the `reconnect` action, a finished sign-in): counted, and forgotten."""
        self.counts[name, "reconnect"] += 1
        self.forget(name)

    def forget(self, name: str) -> None:
        """An explicit reconnect or a changed entry: the server starts afresh, its count too."""
        self._down.pop(name, None)
        self._restarted.pop(name, None)

    def _tell(self, message: str, level: NoticeLevel = "info") -> None:
        if self._notifier is not None:
            self._notifier.notify(message, level)


def _when(wait: float) -> str:
    return (f"hostlink restarts it at the first use after a {BACKOFF:g} s back-off, in {max(wait, 0.1):.1f} s "
            f"(at most {LIMIT} restarts in {_span(WINDOW)})")


def _span(seconds: float) -> str:
    return f"{seconds / 60:g} min" if seconds >= 60 else f"{seconds:g} s"


def _noted(error: McpError, note: str) -> McpError:
    """`error` of the same kind, with `note` after its message and what the server said kept."""
    noted = type(error)(f"{error}; {note}")
    noted.detail = error.detail
    return noted
