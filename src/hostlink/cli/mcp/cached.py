"""`hostlink mcp tools SERVER --cached`: the cached listing, without a session or a server."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from hostlink.cli.session import Fail, host_command

if TYPE_CHECKING:
    from hostlink.mcp import CachedTool, LoadedConfig


def cached_tools(loaded: LoadedConfig, server: str) -> tuple[CachedTool, ...]:
    """The current cached listing of SERVER, or a one-line failure saying how to get one."""
    from hostlink.mcp import McpError, ToolCache, cache_directory, enabled_config, error_code

    try:
        config = enabled_config(loaded.servers, server, loaded.sources.get(server), broken=loaded.broken)
    except McpError as error:
        raise Fail(str(error), error_code(error)) from None
    if not config.cache_tools:
        raise Fail(f'MCP server {server!r} keeps no tool cache; add "cacheTools": true to its entry', "usage")
    tools = ToolCache(cache_directory(os.environ)).load(server, config)
    if tools is None:
        raise Fail(f"no current cached tool listing of MCP server {server!r} (none yet, older than a day, or its "
                   f"configuration changed); `{host_command()} mcp tools {server}` lists them live and caches them",
                   "usage")
    return tools
