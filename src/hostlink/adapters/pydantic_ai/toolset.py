"""`HostlinkMcp`: hostlink's bounded `mcp` proxy tool as a pydantic-ai toolset, for an
agent on any model.

The toolset is a host session over the MCP extension: entering it (`async with agent:`,
or each run when the agent is not entered) reads the configuration — the project's only
when `trust_project` — and leaving the last entry closes every connection, stops every
server process and removes the session's private files. A process that ends with the
toolset still entered removes those files at exit, and its servers see their standard input
close. The MCP SDK is imported at the first call, not here. Sign-in links and every other result come back as the tool's
result; an error result is a failed tool call the model sees (pydantic-ai's `ToolFailed`,
which costs no retry).
"""

from __future__ import annotations

import atexit
import base64
from pathlib import Path
from typing import Any

import anyio
from pydantic_ai.exceptions import ToolFailed, UserError
from pydantic_ai.messages import BinaryContent
from pydantic_ai.tools import RunContext, ToolDefinition
from pydantic_ai.toolsets import AbstractToolset
from pydantic_ai.toolsets.abstract import ToolsetTool
from pydantic_core import SchemaValidator, core_schema

from hostlink.adapters.notices import LogNotifier
from hostlink.host import Ask, CancelSignal, ImageContent, TextContent, ToolResult
from hostlink.host.session import HostSession

# The mcp tool checks its own arguments and answers a bad call with a result the model reads.
_ANY_OBJECT = SchemaValidator(core_schema.dict_schema())



class HostlinkMcp(AbstractToolset[Any]):
    """The configured MCP servers behind one bounded `mcp` tool.

    `trust_project` lets the working directory's `.mcp.json` / `.hostlink/mcp.json`
    count (the user's own config always does); `cwd` is that directory (default: the
    current one when the toolset is entered). `ask` answers the questions of servers that
    opted in to elicitation (`async ask(Question) -> Answer`, from `hostlink.host`);
    without it no server is offered that.
    """

    def __init__(self, trust_project: bool = False, cwd: Path | str | None = None, *, ask: Ask | None = None,
                 id: str | None = None) -> None:
        self.trust_project = trust_project
        self.cwd = Path(cwd) if cwd is not None else None
        self.ask = ask
        self._id = id
        self._host: HostSession | None = None
        self._entered = 0
        self._lock = anyio.Lock()

    @property
    def id(self) -> str | None:
        return self._id

    @property
    def label(self) -> str:
        return "hostlink MCP"

    async def __aenter__(self) -> HostlinkMcp:
        async with self._lock:
            if self._entered == 0:
                from hostlink.mcp import McpExtension

                host = HostSession([McpExtension()], command="hostlink")
                await host.start(cwd=self.cwd or Path.cwd(), project_trusted=self.trust_project,
                                 notifier=LogNotifier("hostlink.mcp"), ask=self.ask)
                self._host = host
                atexit.register(self._at_exit)
            self._entered += 1
        return self

    async def __aexit__(self, *args: Any) -> bool | None:
        async with self._lock:
            self._entered -= 1
            if self._entered == 0 and self._host is not None:
                host, self._host = self._host, None
                atexit.unregister(self._at_exit)
                with anyio.CancelScope(shield=True):
                    await host.shutdown()
        return None

    def _at_exit(self) -> None:
        """The event loop is gone by now: what is left to do without it is the files."""
        if self._host is not None and self._host.output is not None:
            self._host.output.close()

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        host = self._started()
        return {
            name: ToolsetTool(toolset=self, max_retries=1, args_validator=_ANY_OBJECT,
                              tool_def=ToolDefinition(name=name, description=spec.description,
                                                      parameters_json_schema=dict(spec.parameters)))
            for name, spec in host.registry.tools.items()
        }

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any],
                        tool: ToolsetTool[Any]) -> Any:
        result = await self._started().run_tool(name, tool_args, CancelSignal())
        return tool_return(result)

    def _started(self) -> HostSession:
        if self._host is None:
            raise UserError("HostlinkMcp is used outside its context: pass it to an Agent "
                            "(or enter it with `async with`)")
        return self._host


def tool_return(result: ToolResult) -> Any:
    """Text alone as a string; with images, a list of the texts and the images in the
    result's order."""
    text = "\n".join(item.text for item in result.content if isinstance(item, TextContent))
    if result.is_error:
        raise ToolFailed(text)
    if not any(isinstance(item, ImageContent) for item in result.content):
        return text
    return [item.text if isinstance(item, TextContent) else BinaryContent(base64.b64decode(item.data),
                                                                          media_type=item.mime_type)
            for item in result.content]
