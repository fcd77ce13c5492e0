"""hostlink: an MCP client and a Claude Code provider for Python agent hosts."""
