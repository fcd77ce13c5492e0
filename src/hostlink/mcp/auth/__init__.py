"""Authorization to MCP servers: the manager, OAuth sign-in and its callback receiver, the token
store, revocation, client assertions, and keyring advice.

Above :mod:`hostlink.mcp.config.load` and :mod:`hostlink.mcp.transports` (sign-in speaks HTTP through
the safe transport), below :mod:`hostlink.mcp.runtime.clients`.
"""
