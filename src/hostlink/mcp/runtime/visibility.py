"""Which of a server's tools the model may see and call (MCP Apps visibility, task-only tools),
and which run as tasks.

Beside `tool_filter` (the config's includeTools/excludeTools): the listing, the cache, the
status lines and the gateway all ask here, so none of them needs the others to know it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def task_mark(tool: Any) -> str | None:
    """"required" or "optional": how the listing says the tool runs as a task
    (`execution.taskSupport`, a field of the 2025-11-25 shape; a 2026-07-28 listing marks no
    tool, and a server may run any call as a task there); None otherwise."""
    support = getattr(getattr(tool, "execution", None), "task_support", None)
    return support if support in ("required", "optional") else None


def needs_task(tool: Any, tasks: bool = False) -> bool:
    """A tool that can only be called as a task (`execution.taskSupport` "required") where
    the connection cannot run it as one (`tasks`: the snapshot's `task_tools`)."""
    return not tasks and task_mark(tool) == "required"


def model_visible(tool: Any, tasks: bool = False) -> bool:
    """False for tools whose `_meta.ui.visibility` leaves out the model (MCP Apps) and for
    tools that require tasks where the connection runs none (`tasks`: its snapshot's `task_tools`)."""
    if needs_task(tool, tasks):
        return False
    meta = tool.meta or {}
    ui = meta.get("ui") if isinstance(meta, Mapping) else None
    visibility = ui.get("visibility") if isinstance(ui, Mapping) else None
    if visibility is None:
        return True
    return isinstance(visibility, list) and "model" in visibility
