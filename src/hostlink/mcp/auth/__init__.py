"""Authorization to MCP servers: the manager, OAuth sign-in and its callback receiver, the token
store, revocation, client assertions, and keyring advice.

Above the `config` and `transports` subpackages (sign-in speaks HTTP through the safe
transport), below `runtime`.
"""
