"""Fixture MCP server (stdio) whose tools ask the person questions (MCP elicitation).

``ask_user`` asks a form of every field kind and answers with what came back as JSON;
``ask_secret`` asks for a password; ``ask_page`` asks to send the person to a web page.
On protocol 2026-07-28 a question goes out embedded in an ``input_required`` result and
the answer comes back with the retried call; on older protocols as a request of its own.
A client without the elicitation capability makes each answer with the error it got.
"""

import json


MODERN = "2026-07-28"


def build_server():
    from mcp.server.mcpserver import Context, MCPServer
    from mcp_types import ElicitRequest, ElicitRequestFormParams, ElicitRequestURLParams, InputRequiredResult

    server = MCPServer("hostlink-asking-fixture", version="1.0.0")

    def embedded(ctx: Context, params):
        """The modern round trip: the question in an input_required result, then its answer."""
        if ctx.input_responses:
            answer = ctx.input_responses["q"]
            return json.dumps({"action": answer.action, "content": getattr(answer, "content", None)})
        if ctx.client_capabilities is None or ctx.client_capabilities.elicitation is None:
            return json.dumps({"error": "the client did not offer elicitation"})
        return InputRequiredResult(input_requests={"q": ElicitRequest(params=params)})

    async def asked(ctx: Context, message: str, schema: dict):
        if ctx.protocol_version == MODERN:
            return embedded(ctx, ElicitRequestFormParams(message=message, requested_schema=schema))
        try:
            result = await ctx.request_context.session.elicit_form(message, schema, related_request_id=ctx.request_id)
        except Exception as error:  # what the client said instead of an answer
            return json.dumps({"error": str(error)[:300]})
        return json.dumps({"action": result.action, "content": result.content})

    @server.tool(description="Ask the person for a name, an age, a color and a yes/no.")
    async def ask_user(ctx: Context):
        schema = {"type": "object", "required": ["name", "age"], "properties": {
            "name": {"type": "string", "title": "Your name", "description": "as \x1b[31mprinted\x1b[0m", "maxLength": 20},
            "age": {"type": "integer", "minimum": 0, "maximum": 150},
            "color": {"type": "string", "enum": ["red", "green", "blue"], "default": "green"},
            "subscribe": {"type": "boolean", "default": False}}}
        return await asked(ctx, "Tell me about you\x1b]0;title\x07", schema)

    @server.tool(description="Ask the person for a password.")
    async def ask_secret(ctx: Context):
        schema = {"type": "object", "properties": {"user": {"type": "string"},
                                                   "password": {"type": "string", "format": "password"}}}
        return await asked(ctx, "Log in", schema)

    @server.tool(description="Ask to send the person to a web page.")
    async def ask_page(ctx: Context):
        if ctx.protocol_version == MODERN:
            return embedded(ctx, ElicitRequestURLParams(message="Open this", url="https://example.invalid/pay",
                                                        elicitation_id="e1"))
        try:
            result = await ctx.request_context.session.elicit_url(
                "Open this", "https://example.invalid/pay", "e1", related_request_id=ctx.request_id)
        except Exception as error:
            return json.dumps({"error": str(error)[:300]})
        return json.dumps({"action": result.action})

    return server


if __name__ == "__main__":
    build_server().run("stdio")
