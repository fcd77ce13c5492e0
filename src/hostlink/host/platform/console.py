"""What asks a host to stop, besides Ctrl+C, and how the event loop hears it.

POSIX: SIGTERM and SIGHUP (the terminal closing), through `loop.add_signal_handler`.
Windows has neither that loop call nor SIGHUP: Ctrl+Break arrives as SIGBREAK through
`signal.signal`, and closing the console (or logging off, or shutting down) through a
`SetConsoleCtrlHandler` handler, which holds the closing back (Windows allows about five
seconds) until the host's main thread has finished its cleanup.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

CONSOLE_CLOSED = -1  # the stop request of a console closing (Windows): not a signal number
CLOSE_GRACE_SECONDS = 4.5

if sys.platform == "win32":
    TERMINATING_SIGNALS: tuple[int, ...] = (signal.SIGBREAK,)
else:
    TERMINATING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def stop_name(signum: int) -> str:
    """How a stop request is named to a person (`SIGTERM`, `the console closing`)."""
    if signum == CONSOLE_CLOSED:
        return "the console closing"
    return signal.Signals(signum).name


@contextmanager
def capture(loop: asyncio.AbstractEventLoop, signums: Sequence[int], stop: Callable[[int], None]) -> Iterator[None]:
    """While inside, each of `signums` (and, on Windows, the console closing) calls
    `stop(signum)` on `loop` instead of its default action."""
    if sys.platform != "win32":
        for signum in signums:
            loop.add_signal_handler(signum, stop, signum)
        try:
            yield
        finally:
            for signum in signums:
                loop.remove_signal_handler(signum)
        return
    previous = {signum: signal.getsignal(signum) for signum in signums}
    for signum in signums:
        signal.signal(signum, lambda number, _frame: loop.call_soon_threadsafe(stop, number))
    def closing() -> None:
        loop.call_soon_threadsafe(stop, CONSOLE_CLOSED)

    with _console_close(closing):
        try:
            yield
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)


@contextmanager
def _console_close(request_stop: Callable[[], None]) -> Iterator[None]:
    if sys.platform != "win32":
        yield
        return
    import ctypes
    from ctypes import wintypes

    closing = {2, 5, 6}  # CTRL_CLOSE_EVENT, CTRL_LOGOFF_EVENT, CTRL_SHUTDOWN_EVENT

    def handler(event: int) -> bool:
        if event not in closing:
            return False  # Ctrl+C and Ctrl+Break: Python's own handler turns them into signals
        request_stop()
        threading.main_thread().join(CLOSE_GRACE_SECONDS)  # Windows ends the process when this returns
        return True

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    routine = ctypes.WINFUNCTYPE(wintypes.BOOL, wintypes.DWORD)(handler)
    kernel32.SetConsoleCtrlHandler(routine, True)
    try:
        yield
    finally:
        kernel32.SetConsoleCtrlHandler(routine, False)


def exit_status(signum: int) -> int:
    """The exit status of a host a stop request ended: 128 + the signal's number, as shells
    report it; 1 after the console closed."""
    return 1 if signum == CONSOLE_CLOSED else 128 + signum
