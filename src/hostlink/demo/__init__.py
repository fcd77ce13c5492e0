"""The embedded demo MCP server: what `hostlink demo` talks to with no config at all."""
