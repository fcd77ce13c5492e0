"""The MCP client extension, as hosts import it.

Its parts, bottom to top (each imports only those below it, as `tests/test_architecture.py`
checks): `errors`; `config` (the `mcp.json` file); `transports`; `registry` (the MCP registry:
search, `server.json` to an entry); `auth`; `runtime`
(the running clients); then the `mcp` tool, its renderings and the extension at the root.
Every name here is loaded on first use, so importing this package imports neither the SDK nor
pydantic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hostlink.host.lazy import lazy_names

if TYPE_CHECKING:
    from hostlink.mcp.auth.manager import AuthManager
    from hostlink.mcp.auth.signin import sign_in, sign_in_prompt, signed_out
    from hostlink.mcp.auth.store import SecureStore, record_key, stored_state
    from hostlink.mcp.config.load import (
        ConfigError,
        LoadedConfig,
        enabled_config,
        load_config,
        project_config_files,
        user_config_files,
    )
    from hostlink.mcp.config.schema import HttpServer, StdioServer
    from hostlink.mcp.errors import AuthRequired, CallFailed, McpError, error_code
    from hostlink.mcp.extension import McpExtension, default_auth
    from hostlink.mcp.metering import STATES, ServerNumbers, call_labels
    from hostlink.mcp.registry.client import RegistryError, registry_from, search_pages, server_record
    from hostlink.mcp.registry.entry import InputError, build_entry
    from hostlink.mcp.registry.records import listing_line, listings
    from hostlink.mcp.render import filter_note, server_words, status_rows, table, tool_line, transport_of
    from hostlink.mcp.runtime.asking import asking_server
    from hostlink.mcp.runtime.cache import CachedTool, ToolCache, cache_directory
    from hostlink.mcp.runtime.clients import McpRuntime
    from hostlink.mcp.runtime.listing import every_page
    from hostlink.mcp.runtime.subscriptions import ResourceSubscriptions
    from hostlink.mcp.runtime.task_wire import TaskParams, UpdateParams
    from hostlink.mcp.runtime.tasks import CANCEL_SECONDS, ID_CHARS, MAX_IN_FLIGHT, MAX_INPUTS, Status, Tasks
    from hostlink.mcp.runtime.visibility import model_visible, task_mark
    from hostlink.mcp.tool import SEE_TOOLS

_WHERE = {
    name: (f"hostlink.mcp.{module}", name)
    for module, names in {
        "auth.manager": ("AuthManager",),
        "auth.signin": ("sign_in", "sign_in_prompt", "signed_out"),
        "auth.store": ("SecureStore", "record_key", "stored_state"),
        "config.load": ("ConfigError", "LoadedConfig", "enabled_config", "load_config", "project_config_files",
                        "user_config_files"),
        "config.schema": ("HttpServer", "StdioServer"),
        "errors": ("AuthRequired", "CallFailed", "McpError", "error_code"),
        "extension": ("McpExtension", "default_auth"),
        "metering": ("STATES", "ServerNumbers", "call_labels"),
        "registry.client": ("RegistryError", "registry_from", "search_pages", "server_record"),
        "registry.entry": ("InputError", "build_entry"),
        "registry.records": ("listing_line", "listings"),
        "render": ("filter_note", "server_words", "status_rows", "table", "tool_line", "transport_of"),
        "runtime.asking": ("asking_server",),
        "runtime.cache": ("CachedTool", "ToolCache", "cache_directory"),
        "runtime.clients": ("McpRuntime",),
        "runtime.listing": ("every_page",),
        "runtime.subscriptions": ("ResourceSubscriptions",),
        "runtime.task_wire": ("TaskParams", "UpdateParams"),
        "runtime.tasks": ("CANCEL_SECONDS", "ID_CHARS", "MAX_IN_FLIGHT", "MAX_INPUTS", "Status", "Tasks"),
        "runtime.visibility": ("model_visible", "task_mark"),
        "tool": ("SEE_TOOLS",),
    }.items()
    for name in names
}
__getattr__ = lazy_names(__name__, _WHERE)

__all__ = [
    "CANCEL_SECONDS",
    "ID_CHARS",
    "MAX_INPUTS",
    "MAX_IN_FLIGHT",
    "SEE_TOOLS",
    "STATES",
    "AuthManager",
    "AuthRequired",
    "CachedTool",
    "CallFailed",
    "ConfigError",
    "HttpServer",
    "InputError",
    "LoadedConfig",
    "McpError",
    "McpExtension",
    "McpRuntime",
    "RegistryError",
    "ResourceSubscriptions",
    "SecureStore",
    "ServerNumbers",
    "Status",
    "StdioServer",
    "TaskParams",
    "Tasks",
    "ToolCache",
    "UpdateParams",
    "asking_server",
    "build_entry",
    "cache_directory",
    "call_labels",
    "default_auth",
    "enabled_config",
    "error_code",
    "every_page",
    "filter_note",
    "listing_line",
    "listings",
    "load_config",
    "model_visible",
    "project_config_files",
    "record_key",
    "registry_from",
    "search_pages",
    "server_record",
    "server_words",
    "sign_in",
    "sign_in_prompt",
    "signed_out",
    "status_rows",
    "stored_state",
    "table",
    "task_mark",
    "tool_line",
    "transport_of",
    "user_config_files",
]
