"""The ``tools`` face: every visible tool, resource and prompt of every server under a
server-prefixed name (see :mod:`hostlink.gateway.naming`).

Listings fan out to every enabled server in parallel (a server's first listing connects it,
or comes from the tool cache of a server with ``cacheTools``); a server that fails is left
out of the listing and said on stderr. Calls go through the ``mcp`` tool, so arguments are
checked, app-only and task-required tools refused and every answer bounded as for any host.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from hostlink.gateway.naming import exposed_names, prefixed_uri, split_uri
from hostlink.host.output import one_line, strip_controls
from hostlink.mcp.errors import McpError
from hostlink.mcp.render import model_visible

if TYPE_CHECKING:
    from hostlink.gateway.session import StderrNotifier
    from hostlink.mcp.runtime import McpRuntime

T = TypeVar("T")
DESCRIPTION_CHARS = 4096  # of a tool's, resource's or prompt's description
PAGE_CAP = 50  # pages of one server's listing


class Unknown(LookupError):
    """A name or URI the tools face does not offer (the message is safe to send)."""


async def each_server(runtime: McpRuntime, notifier: StderrNotifier,
                      fetch: Callable[[str], Awaitable[T]], what: str, needs: str | None = None) -> dict[str, T]:
    """``fetch(server)`` for every enabled server at once (with ``needs``: only those whose
    connection declared that capability); failures left out and told."""
    found: dict[str, T] = {}
    names = sorted(name for name, config in runtime.servers.items() if not config.disabled)

    async def one(name: str) -> None:
        try:
            if needs is not None and needs not in (await runtime.connect(name)).capabilities:
                return
            found[name] = await fetch(name)
        except McpError as error:
            notifier.notify(f"{what} of MCP server {name!r} left out: {error}", "warning")

    async with anyio.create_task_group() as group:
        for name in names:
            group.start_soon(one, name)
    return {name: found[name] for name in names if name in found}


def _text(value: str | None) -> str | None:
    return strip_controls(value)[:DESCRIPTION_CHARS] if value else None


class ToolsFace:
    """The names handed out by the last listings, to map calls back."""

    def __init__(self) -> None:
        self.tools: dict[str, tuple[str, str]] = {}
        self.prompts: dict[str, tuple[str, str]] = {}

    async def list_tools(self, runtime: McpRuntime, notifier: StderrNotifier) -> list[Any]:
        import mcp_types

        listings = await each_server(runtime, notifier, runtime.search_tools, "the tools")
        tools = {(server, tool.name): tool for server, listed in listings.items()
                 for tool in listed if model_visible(tool)}
        self.tools = exposed_names(tools)
        return [mcp_types.Tool(name=name, title=_text(tools[pair].title), description=_text(tools[pair].description),
                               input_schema=tools[pair].input_schema, output_schema=tools[pair].output_schema,
                               annotations=tools[pair].annotations)
                for name, pair in self.tools.items()]

    def tool(self, name: str) -> tuple[str, str]:
        try:
            return self.tools[name]
        except KeyError:
            raise Unknown(f"Unknown tool: {one_line(name, 100)} (not among the tools listed)") from None

    async def list_resources(self, runtime: McpRuntime, notifier: StderrNotifier) -> list[Any]:
        import mcp_types

        listings = await each_server(runtime, notifier, lambda s: _all(runtime.list_resources, s, "resources"),
                                     "the resources", "resources")
        return [mcp_types.Resource(uri=prefixed_uri(server, str(item.uri)), name=f"{server}__{item.name}",
                                   title=_text(item.title), description=_text(item.description),
                                   mime_type=item.mime_type, size=item.size)
                for server, items in listings.items() for item in items]

    async def list_templates(self, runtime: McpRuntime, notifier: StderrNotifier) -> list[Any]:
        import mcp_types

        listings = await each_server(
            runtime, notifier, lambda s: _all(runtime.list_resource_templates, s, "resource_templates"),
            "the resource templates", "resources")
        return [mcp_types.ResourceTemplate(uri_template=prefixed_uri(server, item.uri_template),
                                           name=f"{server}__{item.name}", title=_text(item.title),
                                           description=_text(item.description), mime_type=item.mime_type)
                for server, items in listings.items() for item in items]

    async def list_prompts(self, runtime: McpRuntime, notifier: StderrNotifier) -> list[Any]:
        import mcp_types

        listings = await each_server(runtime, notifier, lambda s: _all(runtime.list_prompts, s, "prompts"),
                                     "the prompts", "prompts")
        prompts = {(server, item.name): item for server, items in listings.items() for item in items}
        self.prompts = exposed_names(prompts)
        return [mcp_types.Prompt(name=name, title=_text(prompts[pair].title),
                                 description=_text(prompts[pair].description),
                                 arguments=[mcp_types.PromptArgument(name=arg.name, description=_text(arg.description),
                                                                     required=arg.required)
                                            for arg in prompts[pair].arguments or []])
                for name, pair in self.prompts.items()]

    def prompt(self, name: str) -> tuple[str, str]:
        try:
            return self.prompts[name]
        except KeyError:
            raise Unknown(f"Unknown prompt: {one_line(name, 100)} (not among the prompts listed)") from None


def resource(uri: str) -> tuple[str, str]:
    split = split_uri(uri)
    if split is None:
        raise Unknown(f"Unknown resource: {one_line(uri, 200)} (resources here are hostlink://<server>/<uri>)")
    return split


async def _all(list_page: Callable[..., Awaitable[Any]], server: str, attribute: str) -> Sequence[Any]:
    from hostlink.mcp.errors import CallFailed

    items: list[Any] = []
    cursor: str | None = None
    for _ in range(PAGE_CAP):
        page = await list_page(server, cursor)
        items.extend(getattr(page, attribute))
        cursor = page.next_cursor
        if cursor is None:
            return items
    raise CallFailed(f"MCP server {server!r} listed more than {PAGE_CAP} pages of {attribute}")
