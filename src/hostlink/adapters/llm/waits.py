"""The waits of llm's thread for work on the extension loop, which a Ctrl-C always ends.

A SIGINT that lands after a blocking wait checked for its item but before it went to sleep only
sets Python's pending-interrupt flag; it wakes nothing. A plain wait would then raise the
`KeyboardInterrupt` only when the next item came, and a stalled response or tool never sends
one: it waits for the cancel that the interrupt is what sends. So these waits wake every
`WAKE_SECONDS`, and Python raises a pending interrupt then.
"""

from __future__ import annotations

import concurrent.futures
import queue
from typing import TypeVar

T = TypeVar("T")

WAKE_SECONDS = 0.1  # the longest a Ctrl-C can go unnoticed; an idle wait costs 10 wake-ups a second


def next_item(items: queue.SimpleQueue[T]) -> T:
    """The next item of `items`, waiting as long as it takes."""
    while True:
        try:
            return items.get(timeout=WAKE_SECONDS)
        except queue.Empty:
            continue


def result_of(future: concurrent.futures.Future[T]) -> T:
    """The result of `future` (or its exception), waiting as long as it takes."""
    while not concurrent.futures.wait([future], timeout=WAKE_SECONDS).done:
        continue
    return future.result()
