"""`hostlink mcp schema`: print the JSON Schema of `mcp.json` for editors and checkers.

The schema ships as a file in the package, generated from the pydantic schema (a test keeps
the two equal), so printing it imports neither pydantic nor the MCP SDK.
"""

from __future__ import annotations

import click


@click.command(name="schema")
def schema_command() -> None:
    """Print the JSON Schema of mcp.json (save it and point "$schema" at it)."""
    from importlib.resources import files

    click.echo(files("hostlink.mcp").joinpath("mcp.schema.json").read_text(encoding="utf-8"), nl=False)
