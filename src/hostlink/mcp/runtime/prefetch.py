"""The MCP SDK imported in the background once a lasting session has servers configured.

`import mcp` and its client modules take about a second; the first call would pay it
after the model has already answered. Started at session start instead, the import overlaps
work already in flight (the first provider request). It is an import only: no server is
started or contacted before a call needs it. One-shot commands skip it, since they either
never connect (`status`) or connect at once.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Mapping

from hostlink.mcp.config.schema import HttpServer, ServerConfig


def sdk_modules(servers: Mapping[str, ServerConfig]) -> list[str]:
    """The SDK modules a first call of these servers imports (none for no enabled server)."""
    enabled = [config for config in servers.values() if not config.disabled]
    if not enabled:
        return []
    modules = ["mcp", "mcp_types", "mcp.shared.message"]
    if any(isinstance(config, HttpServer) for config in enabled):
        modules.append("mcp.client.streamable_http")
    if any(not isinstance(config, HttpServer) for config in enabled):
        modules.append("mcp.client.stdio")
    return modules


def import_in_background(servers: Mapping[str, ServerConfig]) -> threading.Thread | None:
    modules = sdk_modules(servers)
    if not modules:
        return None
    thread = threading.Thread(target=_import, args=(modules,), name="hostlink-mcp-import", daemon=True)
    thread.start()
    return thread


def _import(modules: list[str]) -> None:
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - the first call imports it again and reports the failure there
            return
