"""Fixture MCP server (stdio, or `--http`) whose tools ask the person questions (MCP elicitation).

`ask_user` asks a form of every field kind and answers with what came back as JSON;
`ask_secret` asks for a password; `ask_page` asks to send the person to a web page;
`sample` asks for a model answer (`tools` true: with a tool, which must be refused);
`roots_after` waits `seconds`, then asks for the client's roots (roots/list);
`roots_together` asks only once `count` calls of it are in flight, and answers only once
each of them has asked (so every ask comes while all of those calls are open).
On protocol 2026-07-28 a question goes out embedded in an `input_required` result and
the answer comes back with the retried call; on older protocols as a request of its own.
A client without the elicitation capability makes each answer with the error it got.
"""

import json
import sys

MODERN = "2026-07-28"


def build_server():
    from mcp.server.mcpserver import Context, MCPServer
    from mcp_types import (
        CreateMessageRequest,
        CreateMessageRequestParams,
        ElicitRequest,
        ElicitRequestFormParams,
        ElicitRequestURLParams,
        InputRequiredResult,
        SamplingMessage,
        TextContent,
        Tool,
    )

    server = MCPServer("hostlink-asking-fixture", version="1.0.0")

    def said(answer) -> str:
        if hasattr(answer, "action"):
            return json.dumps({"action": answer.action, "content": getattr(answer, "content", None)})
        if hasattr(answer, "model"):
            return json.dumps({"text": answer.content.text, "model": answer.model, "stop": answer.stop_reason})
        return json.dumps({"error": str(getattr(answer, "message", answer))[:300]})

    def embedded(ctx: Context, request, capability: str):
        """The modern round trip: the request in an input_required result, then its answer."""
        if ctx.input_responses:
            return said(ctx.input_responses["q"])
        if ctx.client_capabilities is None or getattr(ctx.client_capabilities, capability) is None:
            return json.dumps({"error": f"the client did not offer {capability}"})
        return InputRequiredResult(input_requests={"q": request})

    async def asked(ctx: Context, message: str, schema: dict):
        if ctx.protocol_version == MODERN:
            params = ElicitRequestFormParams(message=message, requested_schema=schema)
            return embedded(ctx, ElicitRequest(params=params),
                            "elicitation")
        try:
            result = await ctx.request_context.session.elicit_form(message, schema, related_request_id=ctx.request_id)
        except Exception as error:  # noqa: BLE001 - what the client said instead of an answer
            return json.dumps({"error": str(error)[:300]})
        return json.dumps({"action": result.action, "content": result.content})

    @server.tool(description="Ask the person for a name, an age, a color and a yes/no.")
    async def ask_user(ctx: Context):
        schema = {"type": "object", "required": ["name", "age"], "properties": {
            "name": {"type": "string", "title": "Your name", "description": "as \x1b[31mprinted\x1b[0m",
                     "maxLength": 20},
            "age": {"type": "integer", "minimum": 0, "maximum": 150},
            "color": {"type": "string", "enum": ["red", "green", "blue"], "default": "green"},
            "subscribe": {"type": "boolean", "default": False}}}
        return await asked(ctx, "Tell me about you\x1b]0;title\x07", schema)

    @server.tool(description="Ask the person to choose, in every shape of SEP-1330: single and multi-select, "
                             "with and without titles.")
    async def ask_choices(ctx: Context):
        schema = {"type": "object", "required": ["size"], "properties": {
            "size": {"type": "string", "enum": ["s", "m", "l"], "default": "m"},
            "tone": {"type": "string", "title": "Tone", "oneOf": [{"const": "calm", "title": "Calm \x1b[31mtone"},
                                                                  {"const": "loud", "title": "Loud tone"}]},
            "legacy": {"type": "string", "enum": ["a", "b"], "enumNames": ["Alpha", "Beta"]},
            "toppings": {"type": "array", "items": {"type": "string", "enum": ["ham", "egg", "kale"]},
                         "minItems": 1, "maxItems": 2},
            "extras": {"type": "array", "items": {"anyOf": [{"const": "x1", "title": "Extra one"},
                                                             {"const": "x2", "title": "Extra two"}]},
                       "default": ["x2"]}}}
        return await asked(ctx, "Choose", schema)

    @server.tool(description="Ask the person for a password.")
    async def ask_secret(ctx: Context):
        schema = {"type": "object", "properties": {"user": {"type": "string"},
                                                   "password": {"type": "string", "format": "password"}}}
        return await asked(ctx, "Log in", schema)

    @server.tool(description="Ask to send the person to a web page.")
    async def ask_page(ctx: Context):
        if ctx.protocol_version == MODERN:
            return embedded(ctx, ElicitRequest(params=ElicitRequestURLParams(
                message="Open this", url="https://example.invalid/pay", elicitation_id="e1")), "elicitation")
        try:
            result = await ctx.request_context.session.elicit_url(
                "Open this", "https://example.invalid/pay", "e1", related_request_id=ctx.request_id)
        except Exception as error:  # noqa: BLE001 - the client's refusal is the answer
            return json.dumps({"error": str(error)[:300]})
        return json.dumps({"action": result.action})

    @server.tool(description="Ask for a model answer to a prompt.")
    async def sample(ctx: Context, prompt: str, max_tokens: int = 100, tools: bool = False):
        messages = [SamplingMessage(role="user", content=TextContent(type="text", text=prompt))]
        offered = [Tool(name="lookup", input_schema={"type": "object"})] if tools else None
        if ctx.protocol_version == MODERN:
            params = CreateMessageRequestParams(messages=messages, max_tokens=max_tokens, tools=offered,
                                                system_prompt="Answer briefly.\x1b[2J")
            return embedded(ctx, CreateMessageRequest(params=params), "sampling")
        try:
            answer = await ctx.request_context.session.create_message(
                messages, max_tokens=max_tokens, system_prompt="Answer briefly.\x1b[2J",
                related_request_id=ctx.request_id)
        except Exception as error:  # noqa: BLE001 - the client's refusal is the answer
            return json.dumps({"error": str(error)[:300]})
        return said(answer)

    async def roots_of(ctx: Context) -> str:
        from mcp.shared.message import ServerMessageMetadata
        from mcp_types import ListRootsRequest, ListRootsResult

        try:
            listed = await ctx.request_context.session.send_request(
                ListRootsRequest(), ListRootsResult, metadata=ServerMessageMetadata(related_request_id=ctx.request_id))
        except Exception as error:  # noqa: BLE001 - the client's refusal is the answer
            return json.dumps({"error": str(error)[:300]})
        return json.dumps({"roots": [str(root.uri) for root in listed.roots]})

    @server.tool(description="Wait, then ask for the client's roots.")
    async def roots_after(ctx: Context, seconds: float = 0):
        import anyio

        await anyio.sleep(seconds)
        return await roots_of(ctx)

    together = {"arrived": 0, "asked": 0}  # calls of roots_together so far, in rounds of `count`

    @server.tool(description="Ask for the client's roots once `count` calls of this tool are open.")
    async def roots_together(ctx: Context, count: int = 2):
        import anyio

        together["arrived"] += 1
        last = -(-together["arrived"] // count) * count  # the number of this round's last call
        while together["arrived"] < last:
            await anyio.sleep(0.01)
        roots = await roots_of(ctx)
        together["asked"] += 1
        while together["asked"] < last:
            await anyio.sleep(0.01)
        return roots

    return server


if __name__ == "__main__":
    if sys.argv[1:] == ["--http"]:  # Streamable HTTP on 127.0.0.1, as the fixture server serves it
        from mcp_fixture_server import listen

        listen(build_server().streamable_http_app())
    else:
        build_server().run("stdio")
