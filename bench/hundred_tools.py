"""A stdio MCP server with 100 tools of realistic size (a description of a few sentences, an
input schema of four typed parameters), for the gateway's context-cost row."""

from __future__ import annotations

import anyio
import mcp_types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

TOOLS = [
    mcp_types.Tool(
        name=f"records_{index:03d}",
        description=(f"Look up records of kind {index} in the catalogue. Returns at most `limit` records "
                     "matching `query`, newest first, each with its id, title and last change. Use `cursor` "
                     "from a previous answer to read the next page."),
        input_schema={"type": "object", "required": ["query"], "properties": {
            "query": {"type": "string", "description": "words to match in titles"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "records per page"},
            "cursor": {"type": "string", "description": "where the previous page ended"},
            "archived": {"type": "boolean", "description": "include archived records"}}})
    for index in range(100)
]


async def list_tools(ctx, params):
    return mcp_types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx, params):
    return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=f"no records for {params.name}")])


async def main() -> None:
    server = Server("hundred-tools", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
