"""A stdio MCP server of 40 tools (official SDK), the size at which a user turns Claude Code's
tool search on: `record_00` … `record_39`, each answering `record NN of <key>: <secret>`.

Run as `python tests/fakes/mcp_many_tools_server.py`.
"""

TOOL_COUNT = 40


def secret(number: int) -> str:
    """What record `number` holds: only a call of that tool can tell it."""
    return f"value-{number * 7919 % 10007:05d}"


def record_tool(number: int):
    def record(key: str) -> str:
        return f"record {number:02d} of {key}: {secret(number)}"

    return record


def build_server():
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("many-tools", version="1.0.0")
    for number in range(TOOL_COUNT):
        server.add_tool(record_tool(number), name=f"record_{number:02d}",
                        description=f"Look up the record {number:02d} kept under a key.")
    return server


if __name__ == "__main__":
    build_server().run("stdio")
