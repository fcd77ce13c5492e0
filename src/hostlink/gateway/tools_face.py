"""The `tools` face: every visible tool, resource and prompt of every server under a
server-prefixed name (see `hostlink.gateway.naming`).

Listings fan out to every enabled server in parallel (a server's first listing connects it,
or comes from the tool cache of a server with `cacheTools`); a server that fails is left
out of the listing and said on stderr. A server with `"tasks"` gets one more tool,
`<server>__task`, to check or cancel a task a call left running (the call answers with its
id). Calls go through the `mcp` tool, so arguments are
checked, app-only and task-required tools refused and every answer bounded as for any host.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from hostlink.gateway.naming import SEPARATOR, exposed_names, prefixed_uri, split_uri
from hostlink.host import Notifier
from hostlink.host.output import counted, one_line, strip_controls
from hostlink.mcp import AuthRequired, McpError, model_visible

if TYPE_CHECKING:
    from hostlink.mcp import McpRuntime

T = TypeVar("T")
DESCRIPTION_CHARS = 4096  # of a tool's, resource's or prompt's description
NAME_CHARS = 200  # of a resource's name or a title
MAX_ITEMS = 1000  # tools (or resources, templates, prompts) offered in all: a host loads every one
MAX_SCHEMA_BYTES = 64 * 1024  # of one tool's input and output schemas: a larger one is left out
MAX_URI_CHARS = 2048
MAX_LISTING_BYTES = 2 * 1024 * 1024  # of the tools offered, as JSON: what a host loads into its context
SIGN_IN = "sign_in"
TASK = "task"  # `<server>__task`: a server with "tasks" checks or cancels a task a call left running
TASK_SCHEMA = {"type": "object", "additionalProperties": False, "required": ["task"], "properties": {
    "task": {"type": "string", "maxLength": 200, "description": "the task id a call answered with"},
    "wait": {"type": "number", "minimum": 0, "maximum": 600, "description": "seconds to wait for it to finish"},
    "cancel": {"type": "boolean", "description": "cancel the task instead"}}}
METHOD_NOT_FOUND = -32601  # JSON-RPC


class Unknown(LookupError):
    """A name or URI the tools face does not offer (the message is safe to send)."""


async def each_server(runtime: McpRuntime, notifier: Notifier, fetch: Callable[[str], Awaitable[T]],
                      what: str, needs: str | None = None, failed: dict[str, McpError] | None = None) -> dict[str, T]:
    """`fetch(server)` for every enabled server at once (with `needs`: only those whose
    connection declared that capability); failures left out, told, and kept in `failed`."""
    found: dict[str, T] = {}
    names = sorted(name for name, config in runtime.servers.items() if not config.disabled)

    async def one(name: str) -> None:
        try:
            if needs is not None and needs not in (await runtime.connect(name)).capabilities:
                return
            found[name] = await fetch(name)
        except McpError as error:
            if error.rpc_code == METHOD_NOT_FOUND:  # a server without it (templates, say): nothing to tell
                return
            notifier.notify(f"{what} of MCP server {name!r} left out: {error}", "warning")
            if failed is not None:
                failed[name] = error

    async with anyio.create_task_group() as group:
        for name in names:
            group.start_soon(one, name)
    return {name: found[name] for name in names if name in found}


def _text(value: str | None) -> str | None:
    return strip_controls(value)[:DESCRIPTION_CHARS] if value else None


def _name(value: str | None) -> str | None:
    return one_line(value, NAME_CHARS) if value else None


def _bounded(items: list[T], notifier: Notifier, what: str) -> list[T]:
    if len(items) > MAX_ITEMS:
        notifier.notify(f"{counted(len(items) - MAX_ITEMS, what)} left out: at most {MAX_ITEMS} are offered "
                        "(the proxy face has no such limit)", "warning")
    return items[:MAX_ITEMS]


def _fits(tool: Any, server: str, notifier: Notifier, tasks: bool) -> bool:
    """A visible tool whose schemas are of a size a host can load (`tasks`: the connection runs task-only tools)."""
    import json

    if not model_visible(tool, tasks):
        return False
    size = len(json.dumps([tool.input_schema, tool.output_schema], default=str))
    if size > MAX_SCHEMA_BYTES:
        notifier.notify(f"tool {one_line(tool.name, 100)!r} of MCP server {server!r} left out: its schemas "
                        f"have {size} bytes (at most {MAX_SCHEMA_BYTES})", "warning")
        return False
    return True


def _schema(value: Any) -> Any:
    """A schema with its `description` and `title` texts sanitized (a host may show them);
    every other keyword, `enum`, `const`, `pattern` and `default` included, as it is."""
    if isinstance(value, dict):
        return {key: strip_controls(item)[:DESCRIPTION_CHARS] if key in ("description", "title")
                and isinstance(item, str) else _schema(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_schema(item) for item in value]
    return value


def _execution(tool: Any, tasks: bool) -> Any:
    """What a 2025-11-25 host reads to ask a call as a task (gateway.tasks): the server's own
    mark, else "optional" (a server with tasks may run any call as one); None without tasks."""
    import mcp_types

    from hostlink.mcp import task_mark

    return mcp_types.ToolExecution(task_support=task_mark(tool) or "optional") if tasks else None


def _plain_uri(uri: str) -> bool:
    return len(uri) <= MAX_URI_CHARS and strip_controls(uri) == uri and uri.isprintable()


class ToolsFace:
    """The names handed out by the last listings, to map calls back. A server that needs a
    sign-in has no tools to list: it is offered as one tool, `<server>__sign_in`, that
    starts the sign-in and answers the authorization link."""

    def __init__(self) -> None:
        self.tools: dict[str, tuple[str, str]] = {}
        self.sign_ins: dict[str, str] = {}  # exposed name -> server
        self.task_tools: dict[str, str] = {}  # exposed name -> server with "tasks"
        self.prompts: dict[str, tuple[str, str]] = {}
        self.listed: set[str] = set()  # "tools", "prompts": listed from every server in this session

    async def resolve_tool(self, runtime: McpRuntime, notifier: Notifier, name: str) -> None:
        """Know `name` before a call without listing every server: see `_resolve`."""
        async def one(server: str) -> list[str]:
            listed = await runtime.search_tools(server)
            return [tool.name for tool in listed if _fits(tool, server, notifier, runtime.snapshot(server).task_tools)]

        await self._resolve(runtime, name, self.tools, one, "tools", lambda: self.list_tools(runtime, notifier))

    async def resolve_prompt(self, runtime: McpRuntime, notifier: Notifier, name: str) -> None:
        """Know the prompt `name` before a get or a completion, as `resolve_tool` does."""
        async def one(server: str) -> list[str]:
            return [prompt.name for prompt in await _all(runtime.list_prompts, server, "prompts")]

        await self._resolve(runtime, name, self.prompts, one, "prompts", lambda: self.list_prompts(runtime, notifier))

    async def _resolve(self, runtime: McpRuntime, name: str, known: dict[str, tuple[str, str]],
                       one: Callable[[str], Awaitable[list[str]]], kind: str,
                       every: Callable[[], Awaitable[Any]]) -> None:
        """An unknown `name` whose prefix is one enabled server's `<server>__` is looked up in
        that server's listing alone (its tool cache, or starting that server only); naming
        gives a pair the same name whatever else is listed, unless another server's name is
        a prefix too. Failing that, and when nothing was listed yet (a host may call without
        listing first), every server is listed."""
        if name in known or name in self.sign_ins or name in self.task_tools:
            return
        servers = [server for server, config in runtime.servers.items()
                   if not config.disabled and name.startswith(server + SEPARATOR)]
        if len(servers) == 1:
            try:
                items = await one(servers[0])
            except McpError:
                items = []  # the listing of every server says why
            for exposed, pair in exposed_names((servers[0], item) for item in items).items():
                known.setdefault(exposed, pair)
            if name in known:
                return
        if kind not in self.listed:
            await every()

    async def list_tools(self, runtime: McpRuntime, notifier: Notifier) -> list[Any]:
        import mcp_types

        failed: dict[str, McpError] = {}
        listings = await each_server(runtime, notifier, runtime.search_tools, "the tools", failed=failed)
        tools = {(server, tool.name): tool for server, listed in listings.items()
                 for tool in listed if _fits(tool, server, notifier, runtime.snapshot(server).task_tools)}
        tasking = [(server, TASK) for server in listings
                   if runtime.servers[server].tasks and (server, TASK) not in tools]
        names = exposed_names([*tools, *tasking, *((server, SIGN_IN) for server, error in failed.items()
                                                   if isinstance(error, AuthRequired))])
        self.task_tools = {name: pair[0] for name, pair in names.items() if pair in tasking}
        self.sign_ins = {name: server for name, (server, tool) in names.items()
                         if (server, tool) not in tools and name not in self.task_tools}
        checking = [mcp_types.Tool(name=name, description=f"Check a task of MCP server {server!r} that one of its "
                                   "calls left running (the call answered with its task id): its status, or its "
                                   "result once done, waiting up to `wait` seconds; or cancel it.",
                                   input_schema=TASK_SCHEMA) for name, server in self.task_tools.items()]
        signing = [mcp_types.Tool(name=name, description=f"MCP server {server!r} needs sign-in. Call this to start "
                                  "it: the answer is an authorization link for the user to open and approve "
                                  "(nothing opens a browser). Its tools are listed once it is done.",
                                  input_schema={"type": "object", "properties": {}, "additionalProperties": False})
                   for name, server in self.sign_ins.items()]
        self.tools = dict(_bounded([item for item in names.items() if item[1] in tools], notifier, "tool"))
        self.listed.add("tools")
        offered: list[mcp_types.Tool] = []
        size = 0
        for name, pair in list(self.tools.items()):
            tool = mcp_types.Tool(name=name, title=_name(tools[pair].title), description=_text(tools[pair].description),
                                  input_schema=_schema(tools[pair].input_schema),
                                  output_schema=_schema(tools[pair].output_schema),
                                  annotations=_annotations(tools[pair].annotations),
                                  execution=_execution(tools[pair], runtime.servers[pair[0]].tasks))
            size += len(tool.model_dump_json(by_alias=True, exclude_none=True))
            if size > MAX_LISTING_BYTES:
                notifier.notify(f"{counted(len(self.tools) - len(offered), 'tool')} left out: the listing reached "
                                f"{MAX_LISTING_BYTES // 1024} KiB (the proxy face has no such limit)", "warning")
                self.tools = {tool.name: self.tools[tool.name] for tool in offered}
                break
            offered.append(tool)
        return [*offered, *checking, *signing]

    def tool(self, name: str) -> tuple[str, str]:
        try:
            return self.tools[name]
        except KeyError:
            raise Unknown(f"Unknown tool: {one_line(name, 100)} (not among the tools listed)") from None

    async def list_resources(self, runtime: McpRuntime, notifier: Notifier) -> list[Any]:
        import mcp_types

        listings = await each_server(runtime, notifier, lambda s: _all(runtime.list_resources, s, "resources"),
                                     "the resources", "resources")
        return _bounded([mcp_types.Resource(uri=prefixed_uri(server, str(item.uri)),
                                            name=f"{server}__{_name(item.name)}",
                                            title=_name(item.title), description=_text(item.description),
                                            mime_type=_name(item.mime_type), size=item.size)
                         for server, items in listings.items() for item in items if _plain_uri(str(item.uri))],
                        notifier, "resource")

    async def list_templates(self, runtime: McpRuntime, notifier: Notifier) -> list[Any]:
        import mcp_types

        listings = await each_server(
            runtime, notifier, lambda s: _all(runtime.list_resource_templates, s, "resource_templates"),
            "the resource templates", "resources")
        return _bounded([mcp_types.ResourceTemplate(uri_template=prefixed_uri(server, item.uri_template),
                                                    name=f"{server}__{_name(item.name)}", title=_name(item.title),
                                                    description=_text(item.description),
                                                    mime_type=_name(item.mime_type))
                         for server, items in listings.items() for item in items if _plain_uri(item.uri_template)],
                        notifier, "resource template")

    async def list_prompts(self, runtime: McpRuntime, notifier: Notifier) -> list[Any]:
        import mcp_types

        listings = await each_server(runtime, notifier, lambda s: _all(runtime.list_prompts, s, "prompts"),
                                     "the prompts", "prompts")
        prompts = {(server, item.name): item for server, items in listings.items() for item in items}
        self.prompts = dict(_bounded(list(exposed_names(prompts).items()), notifier, "prompt"))
        self.listed.add("prompts")
        return [mcp_types.Prompt(name=name, title=_name(prompts[pair].title),
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


def _annotations(annotations: Any) -> Any:
    """The server's hints, its title sanitized (the hints are hints: the host decides)."""
    if annotations is None or not annotations.title:
        return annotations
    return annotations.model_copy(update={"title": _name(annotations.title)})


def resource(uri: str) -> tuple[str, str]:
    split = split_uri(uri)
    if split is None:
        raise Unknown(f"Unknown resource: {one_line(uri, 200)} (resources here are hostlink://<server>/<uri>)")
    return split


async def _all(list_page: Callable[..., Awaitable[Any]], server: str, attribute: str) -> list[Any]:
    from hostlink.mcp import every_page

    return await every_page(lambda cursor: list_page(server, cursor), server, attribute)
