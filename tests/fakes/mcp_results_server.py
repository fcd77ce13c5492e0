"""An MCP server whose results have the shapes real servers give (the official SDK's
low-level server): `python tests/fakes/mcp_results_server.py` (`--http`: over Streamable HTTP).
See tests/fakes/README.md.

Only the handlers given are registered, so it offers resources without templates and no
completions: a server a host must not warn about for what it does not have.
"""

import base64
import mimetypes
from pathlib import Path

# A valid 1x1 PNG (red pixel).
PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"

TOOLS = [
    {"name": "read_text_file", "description": "A file's text, as content and as structuredContent {content}.",
     "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
     "outputSchema": {"type": "object", "properties": {"content": {"type": "string"}}, "required": ["content"]}},
    {"name": "read_media_file", "description": "A file as an image (or a binary resource) block, and those "
     "blocks again as structuredContent {content}.",
     "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
    {"name": "mixed", "description": "Text, an image, text, in that order.",
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "extra", "description": "Text plus structured content that says more than the text.",
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "pictured", "description": "Text plus structured content that holds an image block.",
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "failing", "description": "An isError result with structured content.",
     "inputSchema": {"type": "object", "properties": {}},
     "annotations": {"title": "Fails \x1b[31mloudly\x1b[0m", "readOnlyHint": True}},
    {"name": "find", "description": "Parameters of every shape a pydantic-based server gives.",
     "inputSchema": {"type": "object", "required": ["flag"], "properties": {
         "pattern": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
         "mode": {"enum": ["fast", "full"], "type": "string"},
         "tags": {"type": "array", "items": {"type": "string"}},
         "limit": {"type": ["integer", "null"]},
         "flag": {"type": "boolean"},
         "where": {"$ref": "#/$defs/Where"}},
         "$defs": {"Where": {"type": "object"}}}},
]


def media_block(path: Path) -> dict:
    data = base64.b64encode(path.read_bytes()).decode()
    mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    if mime.startswith("image/"):
        return {"type": "image", "data": data, "mimeType": mime}
    return {"type": "resource", "resource": {"uri": f"file://{path}", "mimeType": mime, "blob": data}}


def call(name: str, arguments: dict) -> dict:
    if name == "read_text_file":
        text = Path(arguments["path"]).read_text()
        return {"content": [{"type": "text", "text": text}], "structuredContent": {"content": text}}
    if name == "read_media_file":
        block = media_block(Path(arguments["path"]))
        return {"content": [block], "structuredContent": {"content": [block]}}
    if name == "mixed":
        return {"content": [{"type": "text", "text": "before"}, {"type": "image", "data": PNG_1X1,
                             "mimeType": "image/png"}, {"type": "text", "text": "after"}]}
    if name == "extra":
        return {"content": [{"type": "text", "text": "created"}], "structuredContent": {"id": 7, "ok": True}}
    if name == "pictured":
        return {"content": [{"type": "text", "text": "drawn"}],
                "structuredContent": {"name": "dot", "picture": {"type": "image", "data": PNG_1X1,
                                                                 "mimeType": "image/png"}}}
    if name == "failing":
        return {"content": [{"type": "text", "text": "no such thing"}], "isError": True,
                "structuredContent": {"code": 404}}
    return {"content": [{"type": "text", "text": f"called {name}"}]}


def build_server():
    import mcp_types
    from mcp.server.lowlevel import Server

    async def list_tools(ctx, params):
        return mcp_types.ListToolsResult.model_validate({"tools": TOOLS})

    async def call_tool(ctx, params):
        return mcp_types.CallToolResult.model_validate(call(params.name, dict(params.arguments or {})))

    async def list_resources(ctx, params):
        return mcp_types.ListResourcesResult(resources=[mcp_types.Resource(uri="results://note", name="note")])

    async def read_resource(ctx, params):
        return mcp_types.ReadResourceResult(contents=[mcp_types.TextResourceContents(uri=str(params.uri),
                                                                                      text="a note")])

    async def list_prompts(ctx, params):
        return mcp_types.ListPromptsResult(prompts=[mcp_types.Prompt(name="hello", description="Say hello.")])

    async def get_prompt(ctx, params):
        return mcp_types.GetPromptResult(messages=[mcp_types.PromptMessage(
            role="user", content=mcp_types.TextContent(type="text", text=f"hello from {params.name}"))])

    return Server("results", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool,
                  on_list_resources=list_resources, on_read_resource=read_resource,
                  on_list_prompts=list_prompts, on_get_prompt=get_prompt)


async def serve() -> None:
    from mcp.server.stdio import stdio_server

    server = build_server()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["--http"]:  # Streamable HTTP on 127.0.0.1, as the fixture server serves it
        from mcp_fixture_server import listen

        listen(build_server().streamable_http_app())
    else:
        import anyio

        anyio.run(serve)
