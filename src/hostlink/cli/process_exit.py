"""A quick interpreter exit for the processes hostlink's terminal hosts run in.

With the MCP SDK imported, the heap holds hundreds of thousands of objects (a model class per
protocol type and version), and Python's shutdown walks all of them in several full
collections while it tears the modules down: about half a second after the last answer was
printed, which a one-shot command (`hostlink mcp call`, `llm -T mcp`) pays every time.
At exit this collects once, so what is garbage by then is still finalized, and freezes the
rest, which the shutdown collections then skip. Python never promises finalizers for objects
that are still alive at exit, so nothing a program may rely on is lost.

Only a host that owns its process registers it (the `hostlink` command, the `llm`
plugin); a library inside someone else's program (the pydantic-ai adapter) leaves the
program's exit alone.
"""

from __future__ import annotations

import atexit
import gc

_registered = False


def freeze_heap_at_exit() -> None:
    """Register the exit step once; later calls do nothing. Handlers registered after this
    one run before it (`atexit` runs them last in, first out)."""
    global _registered
    if not _registered:
        _registered = True
        atexit.register(_collect_and_freeze)


def _collect_and_freeze() -> None:
    gc.collect()
    gc.freeze()
