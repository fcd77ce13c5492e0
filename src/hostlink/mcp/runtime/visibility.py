"""Which of a server's tools the model may see and call (MCP Apps visibility, task-only tools).

Beside `tool_filter` (the config's includeTools/excludeTools): the listing, the cache, the
status lines and the gateway all ask here, so none of them needs the others to know it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def needs_task(tool: Any) -> bool:
    """A tool that can only be called with task augmentation in the 2025-11-25 shape
    (`execution.taskSupport` `"required"`), which hostlink does not follow (it follows the
    2026-07-28 tasks extension, whose listings mark no tool)."""
    execution = getattr(tool, "execution", None)
    return getattr(execution, "task_support", None) == "required"


def model_visible(tool: Any) -> bool:
    """False for tools whose `_meta.ui.visibility` leaves out the model (MCP Apps) and for
    tools that require task augmentation (never callable here)."""
    if needs_task(tool):
        return False
    meta = tool.meta or {}
    ui = meta.get("ui") if isinstance(meta, Mapping) else None
    visibility = ui.get("visibility") if isinstance(ui, Mapping) else None
    if visibility is None:
        return True
    return isinstance(visibility, list) and "model" in visibility
