"""The `mcp.json` configuration: its schema and rules, loading, editing, and import from other clients.

The bottom of the MCP client after its errors module: it imports no other part of it.
"""
