"""The MCP registry: find servers (`/v0.1/servers`) and turn a `server.json` into a config entry.

It sits above `transports` (its requests go through the SafeTransport) and below `auth`. What it
produces is a `mcpServers` entry that `config.edit` writes as any other; everything it reads is
untrusted text, checked and bounded before it is shown or written.
"""
