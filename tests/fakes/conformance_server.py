"""The MCP conformance suite's server fixture, written with the official Python SDK.

`@modelcontextprotocol/conformance`'s server scenarios call tools, resources and prompts of
their own (`test_image_content`, `test://static-text`, `test_simple_prompt`, ...) and check
their shapes; each SDK keeps a server that offers them. This is hostlink's, so the scenarios
can be run straight against it and through `hostlink mcp serve` with it behind.

`python conformance_server.py` serves stdio; `--http PORT` serves Streamable HTTP on
127.0.0.1:PORT/mcp (the SDK's Host/Origin checks for a loopback server, and an in-memory
event store so a stream closed mid-call resumes with `Last-Event-ID`) and prints `listening`.
On protocol 2026-07-28 a question or a model request travels in an `input_required` result;
on older protocols as a request of its own.
"""

import argparse
import base64
import io
import json
import wave

MODERN = "2026-07-28"
# A valid 1x1 PNG (red pixel).
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC")
PNG_B64 = base64.b64encode(PNG).decode()


def _wav() -> str:
    """A tenth of a second of silence as a WAV file, base64."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(8000)
        out.writeframes(b"\0\0" * 800)
    return base64.b64encode(buffer.getvalue()).decode()


SEP1034_SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string", "default": "John Doe"},
    "age": {"type": "integer", "default": 30},
    "score": {"type": "number", "default": 95.5},
    "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
    "verified": {"type": "boolean", "default": True}}}
SEP1330_SCHEMA = {"type": "object", "properties": {
    "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
    "titledSingle": {"type": "string", "oneOf": [{"const": "value1", "title": "First Option"},
                                                 {"const": "value2", "title": "Second Option"},
                                                 {"const": "value3", "title": "Third Option"}]},
    "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                   "enumNames": ["Option One", "Option Two", "Option Three"]},
    "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
    "titledMulti": {"type": "array", "items": {"anyOf": [{"const": "value1", "title": "First Choice"},
                                                         {"const": "value2", "title": "Second Choice"},
                                                         {"const": "value3", "title": "Third Choice"}]}}}}
USER_SCHEMA = {"type": "object", "required": ["username", "email"], "properties": {
    "username": {"type": "string", "description": "User's response"},
    "email": {"type": "string", "description": "User's email address"}}}
SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
    "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"},
                                                           "city": {"type": "string"}}}},
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False}
CITIES = ("paris", "park", "party")


def build_server():
    """The SDK MCPServer with every tool, resource, template, prompt and completion the
    server scenarios call."""
    import anyio
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.prompts.base import UserMessage
    from mcp_types import (
        AudioContent,
        CallToolResult,
        Completion,
        CreateMessageRequest,
        CreateMessageRequestParams,
        ElicitRequest,
        ElicitRequestFormParams,
        EmbeddedResource,
        EmptyResult,
        ImageContent,
        InputRequiredResult,
        PromptReference,
        SamplingMessage,
        SetLevelRequestParams,
        SubscribeRequestParams,
        TextContent,
        TextResourceContents,
        UnsubscribeRequestParams,
    )

    server = MCPServer("hostlink-conformance-fixture", version="1.0.0")

    def embedded(uri: str, mime: str, text: str) -> EmbeddedResource:
        return EmbeddedResource(type="resource", resource=TextResourceContents(uri=uri, mime_type=mime, text=text))

    def image() -> ImageContent:
        return ImageContent(type="image", data=PNG_B64, mime_type="image/png")

    async def ask(ctx: Context, request, capability: str, ask_legacy):
        """A client request from within a tool call, in the form the session's protocol uses:
        the answer, or an InputRequiredResult that the client answers by retrying the call."""
        if ctx.protocol_version != MODERN:
            return await ask_legacy()
        if ctx.input_responses:
            return ctx.input_responses["q"]
        if ctx.client_capabilities is None or getattr(ctx.client_capabilities, capability) is None:
            raise ValueError(f"the client did not offer {capability}")
        return InputRequiredResult(input_requests={"q": request})

    async def elicited(ctx: Context, message: str, schema: dict):
        answer = await ask(ctx, ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema)),
                           "elicitation", lambda: ctx.request_context.session.elicit_form(
                               message, schema, related_request_id=ctx.request_id))
        if isinstance(answer, InputRequiredResult):
            return answer
        return f"Elicitation completed: action={answer.action}, content={json.dumps(answer.content)}"

    @server.tool(description="Answer a simple text.")
    def test_simple_text() -> str:
        return "This is a simple text response for testing."

    @server.tool(description="Answer a 1x1 PNG image.")
    def test_image_content() -> CallToolResult:
        return CallToolResult(content=[image()])

    @server.tool(description="Answer a short WAV sound.")
    def test_audio_content() -> CallToolResult:
        return CallToolResult(content=[AudioContent(type="audio", data=_wav(), mime_type="audio/wav")])

    @server.tool(description="Answer an embedded text resource.")
    def test_embedded_resource() -> CallToolResult:
        return CallToolResult(content=[embedded("test://embedded-resource", "text/plain",
                                                "This is an embedded resource content.")])

    @server.tool(description="Answer text, an image and an embedded resource.")
    def test_multiple_content_types() -> CallToolResult:
        return CallToolResult(content=[
            TextContent(type="text", text="Multiple content types test:"), image(),
            embedded("test://mixed-content-resource", "application/json", json.dumps({"test": "data", "value": 123}))])

    @server.tool(description="Send three info log messages while running.")
    async def test_tool_with_logging(ctx: Context) -> str:
        for number, message in enumerate(("Tool execution started", "Tool processing data",
                                          "Tool execution completed")):
            if number:
                await anyio.sleep(0.05)
            await ctx.log("info", message)
        return "Tool with logging executed successfully"

    @server.tool(description="Always fail.")
    def test_error_handling() -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text",
                                                   text="This tool intentionally returns an error for testing")],
                              is_error=True)

    @server.tool(description="Report progress 0, 50 and 100 of 100 while running.")
    async def test_tool_with_progress(ctx: Context) -> str:
        for number, progress in enumerate((0, 50, 100)):
            if number:
                await anyio.sleep(0.05)
            await ctx.report_progress(progress, 100, f"step {number + 1}")
        return "Tool with progress executed successfully"

    @server.tool(description="Ask the client's model to answer the prompt.")
    async def test_sampling(ctx: Context, prompt: str):
        messages = [SamplingMessage(role="user", content=TextContent(type="text", text=prompt))]
        answer = await ask(ctx, CreateMessageRequest(params=CreateMessageRequestParams(messages=messages,
                                                                                      max_tokens=100)),
                           "sampling", lambda: ctx.request_context.session.create_message(
                               messages, max_tokens=100, related_request_id=ctx.request_id))
        if isinstance(answer, InputRequiredResult):
            return answer
        return f"LLM response: {getattr(answer.content, 'text', '')}"

    @server.tool(description="Ask the user for a name and an email address.")
    async def test_elicitation(ctx: Context, message: str):
        return await elicited(ctx, message, USER_SCHEMA)

    @server.tool(description="Ask with a default value for every primitive type (SEP-1034).")
    async def test_elicitation_sep1034_defaults(ctx: Context):
        return await elicited(ctx, "Please review your details", SEP1034_SCHEMA)

    @server.tool(description="Ask with every enum form (SEP-1330).")
    async def test_elicitation_sep1330_enums(ctx: Context):
        return await elicited(ctx, "Please choose", SEP1330_SCHEMA)

    @server.tool(description="Close the response stream mid-call; the answer follows on the resumed stream.")
    async def test_reconnection(ctx: Context) -> str:
        await anyio.sleep(0.1)
        await ctx.close_sse_stream()
        await anyio.sleep(0.2)
        return "Reconnection test completed"

    def json_schema_2020_12_tool(name: str = "", address: dict | None = None) -> str:
        return json.dumps({"name": name, "address": address})

    server.add_tool(json_schema_2020_12_tool, description="Tool with JSON Schema 2020-12 features")
    server._tool_manager.get_tool("json_schema_2020_12_tool").parameters = SCHEMA_2020_12

    @server.resource("test://static-text", name="static-text", mime_type="text/plain",
                     description="A static text resource.")
    def static_text() -> str:
        return "This is the content of the static text resource."

    @server.resource("test://static-binary", name="static-binary", mime_type="image/png",
                     description="A static binary resource (a PNG).")
    def static_binary() -> bytes:
        return PNG

    @server.resource("test://watched-resource", name="watched-resource", mime_type="text/plain",
                     description="A resource to subscribe to.")
    def watched() -> str:
        return "Watched resource content."

    @server.resource("test://template/{id}/data", name="template-data", mime_type="application/json",
                     description="Data for an id.")
    def template_data(id: str) -> str:
        return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})

    @server.prompt(description="A simple prompt without arguments.")
    def test_simple_prompt() -> str:
        return "This is a simple prompt for testing."

    @server.prompt(description="A prompt with two arguments.")
    def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
        return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"

    @server.prompt(description="A prompt that embeds a resource.")
    def test_prompt_with_embedded_resource(resourceUri: str) -> list:
        return [UserMessage(embedded(resourceUri, "text/plain", "Embedded resource content for testing.")),
                UserMessage("Please process the embedded resource above.")]

    @server.prompt(description="A prompt with an image.")
    def test_prompt_with_image() -> list:
        return [UserMessage(image()), UserMessage("Please analyze the image above.")]

    @server.completion()
    async def complete(ref, argument, context):
        if isinstance(ref, PromptReference) and ref.name == "test_prompt_with_arguments":
            values = [value for value in CITIES if value.startswith(argument.value)]
            return Completion(values=values, total=len(values), has_more=False)
        return Completion(values=[])

    async def accepted(ctx, params) -> EmptyResult:
        """Subscriptions and log levels are accepted: the scenarios check the answer only
        (the resources never change; the tool's logs go out at info whatever the level)."""
        return EmptyResult()

    lowlevel = server._lowlevel_server
    lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, accepted)
    lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, accepted)
    lowlevel.add_request_handler("logging/setLevel", SetLevelRequestParams, accepted)
    return server


def event_store():
    """Every event of every stream in memory: a closed stream replays after `Last-Event-ID`."""
    from mcp.server.streamable_http import EventMessage, EventStore

    class MemoryEvents(EventStore):
        def __init__(self) -> None:
            self.events: list[tuple[str, str, object]] = []  # (event id, stream id, message)

        async def store_event(self, stream_id, message):
            event_id = str(len(self.events) + 1)
            self.events.append((event_id, stream_id, message))
            return event_id

        async def replay_events_after(self, last_event_id, send_callback):
            stream = next((stream for event, stream, _ in self.events if event == last_event_id), None)
            if stream is None:
                return None
            for event, owner, message in self.events[int(last_event_id):]:
                if owner == stream and message is not None:
                    await send_callback(EventMessage(message, event))
            return stream

    return MemoryEvents()


def serve_http(port: int) -> None:
    import asyncio

    import uvicorn

    app = build_server().streamable_http_app(event_store=event_store(), retry_interval=500)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)

    async def started() -> None:
        task = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.05)
        print("listening", flush=True)
        await task

    asyncio.run(started())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--http", type=int, metavar="PORT", help="serve Streamable HTTP on 127.0.0.1:PORT/mcp")
    args = parser.parse_args()
    if args.http:
        serve_http(args.http)
    else:
        build_server().run("stdio")


if __name__ == "__main__":
    main()
