"""The ``llm`` plugin: hostlink's extensions as llm models, tools and commands.

llm imports every plugin on every command, so this entry module imports only click and
llm (both already loaded by then): the host machinery (:mod:`hostlink.adapters.llm_host`)
and the extensions load when llm first asks for models or tools, and a command group's
module only when that command runs. Registration does no I/O; the host session (config
read, MCP connections) starts on first use and ends at exit.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import click
import llm

if TYPE_CHECKING:
    from hostlink.adapters.llm_host import LlmHost
    from hostlink.host import Extension

DEFAULT_EXTENSIONS = (
    ("hostlink.mcp.extension", "McpExtension"),
    ("hostlink.claude_code.extension", "ClaudeCodeExtension"),
)


# --- commands --------------------------------------------------------------------------


class _LazyGroup(click.Group):
    """Stands in for a hostlink command group and imports it only when it runs."""

    def __init__(self, name: str, module: str, attribute: str, help_text: str) -> None:
        super().__init__(name=name, help=help_text, short_help=help_text)
        self._target = (module, attribute)

    def _real(self) -> click.Group:
        module, attribute = self._target
        group: click.Group = getattr(importlib.import_module(module), attribute)
        return group

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        # click invokes ``ctx.command``, so the real group takes over from here.
        return self._real().make_context(info_name, args, parent=parent, **extra)


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
            from hostlink.adapters.llm_host import LlmHost

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
    from hostlink.cli import COMMAND_GROUPS

    for name, (module, attribute, help_text) in COMMAND_GROUPS.items():
        cli.add_command(_LazyGroup(name, module, attribute, help_text))
