"""The `hostlink` command: a host like any other, on `hostlink.host.session.HostSession`.

Its command groups (`mcp`, `claude-code`) are the ones every terminal host mounts: the
`llm` plugin adds the same groups to `llm`. They are imported only when they run:
`import mcp` alone costs more than a second here, and `hostlink --help` or
`hostlink mcp status` must not pay it.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from hostlink.cli.process_exit import freeze_heap_at_exit
from hostlink.cli.process_warnings import show_warnings_as_one_line

# name -> (module, attribute, one-line help shown by `hostlink --help` and `llm --help`)
COMMAND_GROUPS = {
    "mcp": ("hostlink.cli.mcp", "mcp_group", "Inspect and use the configured MCP servers."),
    "claude-code": (
        "hostlink.cli.claude_code",
        "claude_code_group",
        "The Claude Code provider: doctor and diagnostics.",
    ),
}
# commands of the hostlink CLI alone (llm mounts only COMMAND_GROUPS)
_OWN_COMMANDS = {
    "serve": ("hostlink.cli.serve", "serve_command",
              "Serve Claude Code as a local Anthropic Messages / OpenAI Chat Completions endpoint."),
}
_LAZY = {**COMMAND_GROUPS, **_OWN_COMMANDS}


def load_command(name: str) -> click.Command:
    """The lazy command `name` (a group of `COMMAND_GROUPS` or one of hostlink's own), imported now."""
    module, attribute, _ = _LAZY[name]
    command: click.Command = getattr(importlib.import_module(module), attribute)
    return command


class _LazyGroup(click.Group):
    """The `hostlink` command: lists its lazy commands from the table, imports one when asked for it."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *_LAZY])

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        return load_command(name) if name in _LAZY else super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, help_text) for name, (_, _, help_text) in _LAZY.items()]
        rows += [(name, command.get_short_help_str()) for name, command in self.commands.items()]
        with formatter.section("Commands"):
            formatter.write_dl(sorted(rows))


class StandIn(click.Group):
    """Stands in for a lazy command on a group hostlink does not own (llm's), and imports it only
    when it runs: click invokes `ctx.command`, so the real command takes over from its context."""

    def __init__(self, name: str) -> None:
        help_text = _LAZY[name][2]
        super().__init__(name=name, help=help_text, short_help=help_text)

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        return load_command(self.name or "").make_context(info_name, args, parent=parent, **extra)


@click.group(cls=_LazyGroup)
@click.version_option(package_name="hostlink")
def cli() -> None:
    """hostlink: an MCP client and a Claude Code provider for Python agent hosts."""


def main() -> None:
    """The `hostlink` command, named so however Python was started (advice names it)."""
    freeze_heap_at_exit()
    show_warnings_as_one_line()
    cli.main(prog_name="hostlink")


@cli.command()
def demo() -> None:
    """List the embedded demo MCP server's tools and call one, through the `mcp` tool."""
    from hostlink.cli.demo import run_demo

    run_demo()

