"""`hostlink mcp serve`: hostlink's MCP client as one MCP server any MCP host can add.

A host like `serve/`: one `HostSession` over the MCP
extension, driven by the MCP SDK's server side (stdio, or Streamable HTTP on loopback). Two
faces: `proxy` offers the one bounded `mcp` tool; `tools` offers every visible tool of
every server as `<server>__<tool>` (see `hostlink.gateway.naming`), with resources
and prompts under server-prefixed names. Every call runs through the `mcp` tool, so every
answer is bounded and sanitized as it is for any other host.
"""
