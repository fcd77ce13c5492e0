"""`HostlinkMcpTools`: hostlink's MCP client as LangChain tools, for an agent on any model.

The tools live on a host session over the MCP extension: entering (`async with
HostlinkMcpTools() as tools:`) reads the configuration — the project's only when
`trust_project` — and leaving closes every connection, stops every server process and
removes the session's private files. `expose="proxy"` (the default) gives the one bounded
`mcp` tool; `expose="tools"` gives every server's visible tools as `<server>__<tool>`, as
`hostlink mcp serve --expose tools` does, a server that needs a sign-in as
`<server>__sign_in` (its answer is the authorization link). Either way every call goes
through the `mcp` tool: trust, filters, checked arguments and bounded output as on every
host. An error result is a failed tool call the model reads (`ToolException`, handled).
The MCP SDK is imported when the session starts, not here.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio
from langchain_core.tools import BaseTool, StructuredTool, ToolException

from hostlink.adapters.notices import LogNotifier
from hostlink.host import Ask, CancelSignal, ImageContent, TextContent, ToolResult
from hostlink.host.session import HostSession

if TYPE_CHECKING:
    from hostlink.gateway.tools_face import ToolsFace
    from hostlink.mcp import McpRuntime


class HostlinkMcpTools:
    """The configured MCP servers as LangChain tools, for as long as the context is entered.

    `trust_project` lets the working directory's `.mcp.json` / `.hostlink/mcp.json` count
    (the user's own config always does); `cwd` is that directory (default: the current one
    when entered). `ask` answers the questions of servers that opted in to elicitation.
    The tools are async (`ainvoke`, an async agent loop), on the loop that entered them.
    """

    def __init__(self, trust_project: bool = False, cwd: Path | str | None = None, *,
                 expose: Literal["proxy", "tools"] = "proxy", ask: Ask | None = None) -> None:
        if expose not in ("proxy", "tools"):
            raise ValueError(f"expose: {str(expose)[:40]!r} is not one of proxy, tools")
        self.trust_project = trust_project
        self.cwd = Path(cwd) if cwd is not None else None
        self.expose = expose
        self.ask = ask
        self._host: HostSession | None = None

    async def __aenter__(self) -> list[BaseTool]:
        from hostlink.mcp import McpExtension

        if self._host is not None:
            raise RuntimeError("HostlinkMcpTools is already entered")
        extension = McpExtension()
        host = HostSession([extension], command="hostlink")
        notices = LogNotifier("hostlink.mcp")
        await host.start(cwd=self.cwd or Path.cwd(), project_trusted=self.trust_project, notifier=notices,
                         ask=self.ask)
        self._host = host
        try:
            if self.expose == "proxy" or extension.runtime is None:  # no configuration: the mcp tool says why
                return [_proxy_tool(host)]
            return await _server_tools(host, extension.runtime, notices)
        except BaseException:
            await self.__aexit__()
            raise

    async def __aexit__(self, *args: object) -> None:
        host, self._host = self._host, None
        if host is not None:
            with anyio.CancelScope(shield=True):
                await host.shutdown()


def _proxy_tool(host: HostSession) -> BaseTool:
    spec = host.registry.tools["mcp"]
    return _tool(host, spec.name, spec.description, dict(spec.parameters), lambda args: args)


async def _server_tools(host: HostSession, runtime: McpRuntime, notices: LogNotifier) -> list[BaseTool]:
    """Every server's tools under the tools face's names, each call sent through `mcp`."""
    from hostlink.gateway.tools_face import ToolsFace

    face = ToolsFace()
    listed = await face.list_tools(runtime, notices)
    return [_tool(host, tool.name, tool.description or "", dict(tool.input_schema), _call_of(face, tool.name))
            for tool in listed]


def _call_of(face: ToolsFace, name: str) -> Any:
    if name in face.sign_ins:
        server = face.sign_ins[name]
        return lambda args: {"action": "auth", "server": server}
    server, tool = face.tool(name)
    return lambda args: {"action": "call", "server": server, "tool": tool, "args": args}


def _tool(host: HostSession, name: str, description: str, schema: dict[str, Any], arguments: Any) -> BaseTool:
    async def run(**args: Any) -> Any:
        return tool_content(await host.run_tool("mcp", arguments(args), CancelSignal()))

    def refuse(**args: Any) -> Any:
        raise RuntimeError("hostlink's MCP tools run asynchronously: use ainvoke (or an async agent loop)")

    return StructuredTool(name=name, description=description, args_schema=schema, func=refuse, coroutine=run,
                          handle_tool_error=True)


def tool_content(result: ToolResult) -> str | list[str | dict[str, Any]]:
    """Text alone as a string; with images, text and standard image blocks in the result's
    order. An error result raises `ToolException`, which the tool hands the model."""
    text = "\n".join(item.text for item in result.content if isinstance(item, TextContent))
    if result.is_error:
        raise ToolException(text)
    if not any(isinstance(item, ImageContent) for item in result.content):
        return text
    return [{"type": "text", "text": item.text} if isinstance(item, TextContent)
            else {"type": "image", "base64": item.data, "mime_type": item.mime_type}
            for item in result.content if isinstance(item, (TextContent, ImageContent))]

