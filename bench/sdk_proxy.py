"""A pass-through MCP server written with nothing but the SDK, for the gateway's call rows:
the floor of a second hop. It connects to the stdio server on its command line as hostlink's
client does (`auto` mode), offers that server's tools as they are and forwards each call
unchanged (no bounds, no policy): `python bench/sdk_proxy.py COMMAND [ARG ...]`."""

from __future__ import annotations

import sys

import anyio


async def main(command: str, args: list[str]) -> None:
    import mcp_types
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    async with Client(stdio_client(StdioServerParameters(command=command, args=args)), mode="auto") as upstream:
        tools = (await upstream.list_tools()).tools

        async def list_tools(ctx, params):
            return mcp_types.ListToolsResult(tools=tools)

        async def call_tool(ctx, params):
            return await upstream.call_tool(params.name, dict(params.arguments or {}))

        server = Server("sdk-proxy", on_list_tools=list_tools, on_call_tool=call_tool)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2:])
