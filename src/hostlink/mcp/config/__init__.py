"""The ``mcp.json`` configuration: its schema and rules, loading, editing, and import from other clients.

The bottom of :mod:`hostlink.mcp` after :mod:`hostlink.mcp.errors`: it imports no other part of it.
"""
