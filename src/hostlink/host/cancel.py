"""The one bridge from a host's `CancelSignal` to an anyio cancel scope.

A host may cancel from any thread (llm's main thread, a signal handler), while the work runs
on the extension's event loop; the scope is cancelled on that loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager

import anyio

from hostlink.host import CancelSignal


@contextmanager
def cancelled_by(signal: CancelSignal) -> Iterator[anyio.CancelScope]:
    """A cancel scope that `signal` cancels; check `scope.cancelled_caught` afterwards."""
    loop = asyncio.get_running_loop()
    with anyio.CancelScope() as scope:
        def cancel() -> None:
            loop.call_soon_threadsafe(scope.cancel)

        unregister = signal.on_cancel(cancel)
        try:
            yield scope
        finally:
            unregister()
