"""The `llm` plugin: hostlink's extensions as llm models, tools and commands.

llm imports every plugin on every command, so this entry module imports only click and
llm (both already loaded by then): the host machinery (`hostlink.adapters.llm.llm_host`)
and the extensions load when llm first asks for models or tools, and a command group's
module only when that command runs. Registration does no I/O; the host session (config
read, MCP connections) starts on first use and ends at exit.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import click
import llm

if TYPE_CHECKING:
    from hostlink.adapters.llm.llm_host import LlmHost
    from hostlink.host import Extension

DEFAULT_EXTENSIONS = (
    ("hostlink.mcp", "McpExtension"),
    ("hostlink.claude_code", "ClaudeCodeExtension"),
)


# --- the plugin hooks ------------------------------------------------------------------

_host: LlmHost | None = None
_extensions: Sequence[Extension] | None = None
_host_lock = threading.Lock()


def use_extensions(extensions: Sequence[Extension]) -> None:
    """Replace the default extensions before the plugin's first use (embedding, tests)."""
    global _extensions
    with _host_lock:
        if _host is not None:
            raise RuntimeError("the hostlink llm host is already running")
        _extensions = tuple(extensions)


def host() -> LlmHost:
    """This process's host, created (registration only, no I/O) on first call."""
    global _host
    with _host_lock:
        if _host is None:
            from hostlink.adapters.llm.llm_host import LlmHost

            extensions = _extensions
            if extensions is None:
                extensions = [
                    getattr(importlib.import_module(module), name)() for module, name in DEFAULT_EXTENSIONS
                ]
            _host = LlmHost(extensions)
        return _host


@llm.hookimpl
def register_models(register: Callable[..., None]) -> None:
    for model in host().models():
        register(model)


@llm.hookimpl
def register_tools(register: Callable[..., None]) -> None:
    for tool in host().tools():
        register(tool)


@llm.hookimpl
def register_commands(cli: click.Group) -> None:
    from hostlink.cli import COMMAND_GROUPS, StandIn

    for name in COMMAND_GROUPS:
        cli.add_command(StandIn(name))
