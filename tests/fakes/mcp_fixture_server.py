"""Fixture MCP server for hostlink tests, written with the official SDK.

Run as `python tests/fakes/mcp_fixture_server.py [--http] [--legacy-only] …`
(see tests/fakes/README.md). stdio by default; `--http` serves Streamable HTTP on
127.0.0.1 at an ephemeral port and prints its URL as the first stdout line.
"""

import argparse
import base64
import json
import os
import sys
import time
from urllib.parse import parse_qs

# A valid 1x1 PNG (red pixel).
PNG_1X1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
)
ESCAPES_TEXT = (
    "plain "
    "\x1b[31mred\x1b[0m "  # CSI
    "\x1b]0;window title\x07 "  # OSC ended by BEL
    "\x1b]8;;https://evil.example/\x1b\\link\x1b]8;;\x1b\\ "  # OSC 8 hyperlink ended by ST
    "bell\x07 back\x08 nul\x00 "  # C0
    "c1csi\x9b31m osc\x9d2;t\x9c "  # C1
    "end"
)
ITEMS = ("alpha", "beta", "gamma")
STATUSES = (400, 401, 403, 404, 503)  # what `/status/N/…` answers over HTTP


def build_server(traced: bool = False):
    """The SDK MCPServer with every fixture tool, resource, template and prompt (`traced`: and
    `trace_context`)."""
    import anyio
    from mcp.server.mcpserver import Context, Image, MCPServer
    from mcp.server.mcpserver.prompts import Prompt
    from mcp.server.mcpserver.prompts.base import AssistantMessage, Message, UserMessage
    from mcp_types import CallToolResult, Completion, NotificationParams, ResourceTemplateReference, TextContent
    from pydantic import BaseModel

    server = MCPServer("hostlink-fixture", version="1.0.0")

    @server.tool(description="Echo the given text back.")
    def echo(text: str) -> str:
        return text

    if traced:
        @server.tool(description="The W3C trace context this call arrived with (its _meta), as JSON.")
        def trace_context(ctx: Context) -> str:
            meta = ctx.request_context.meta or {}
            return json.dumps({key: meta.get(key) for key in ("traceparent", "tracestate")})

    @server.tool(description="Add two integers.")
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool(description="Sleep for the given number of seconds, then answer.")
    async def slow(seconds: float) -> str:
        await anyio.sleep(seconds)
        return f"slept {seconds}"

    @server.tool(description="Exit the server process in the middle of the call.")
    def crash() -> str:
        sys.stderr.write("fixture: crashing on purpose\n")
        sys.stderr.flush()
        os._exit(3)

    @server.tool(description="Never answer.")
    async def hang() -> str:
        await anyio.sleep_forever()
        return "unreachable"

    @server.tool(description="The server's process id.")
    def pid() -> int:
        return os.getpid()

    @server.tool(description="Return n_bytes of text in 100-byte lines.")
    def big(n_bytes: int) -> str:
        line = "x" * 99 + "\n"
        return (line * (n_bytes // 100 + 1))[:n_bytes]

    @server.tool(description="Return text laden with terminal escape and control sequences.")
    def escapes() -> str:
        return ESCAPES_TEXT

    @server.tool(description="Report progress steps times, each message laden with escapes, then answer.")
    async def progress(steps: int, ctx: Context, pause: float = 0.3) -> str:
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps, f"step {step} {ESCAPES_TEXT}")
            await anyio.sleep(pause)
        return f"done after {steps} steps"

    @server.tool(description="Send a debug and an info log message laden with escapes, a long warning and a "
                             "structured error while running, then answer.")
    async def logs(ctx: Context) -> str:
        await ctx.log("debug", f"debug {ESCAPES_TEXT}", logger_name="deep")
        await ctx.log("info", f"info {ESCAPES_TEXT}", logger_name="worker\x1b[31m")
        await ctx.log("warning", "w" * 10_000)
        await ctx.log("error", {"code": 7, "why": "\x1b[2Jcleared"})
        return "logged"

    @server.tool(description="Return lines lines, each laden with terminal escape and control sequences.")
    def many_escapes(lines: int) -> str:
        return "".join(f"line {number}: {ESCAPES_TEXT}\n" for number in range(lines))

    @server.tool(description="Return count images; n_bytes > 0 makes each that many raw bytes.")
    def image(count: int = 1, n_bytes: int = 0) -> list[Image]:
        data = PNG_1X1 if n_bytes <= 0 else b"\x89PNG" + b"\0" * max(0, n_bytes - 4)
        return [Image(data=data, format="png") for _ in range(count)]

    class Weather(BaseModel):
        city: str
        celsius: float
        conditions: list[str]

    @server.tool(description="Structured result with an output schema.")
    def structured(city: str = "Paris") -> Weather:
        return Weather(city=city, celsius=21.5, conditions=["sunny", "dry"])

    @server.tool(description="Always fails with an isError result (structured: with structured content too).")
    def fail(structured: bool = False) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text="fixture failure")], is_error=True,
                              structured_content={"code": 7, "why": "\x1b[31mfixture\x1b[0m"} if structured else None)

    @server.tool(description="Only for the app audience; a model must never see it.",
                 meta={"ui": {"visibility": ["app"]}})
    def app_only() -> str:
        return "app-only tool was called"

    @server.tool(description="Add a tool named `name` (and a prompt of that name), then tell the client its "
                             "tool, prompt and resource lists changed (and, on 2026-07-28, that the resource "
                             "`updated` was updated, when given).")
    async def change_tools(ctx: Context, name: str = "added", updated: str = "") -> str:
        def added() -> str:
            return f"{name} was added"

        server.add_tool(added, name=name, description=f"Added at run time as {name}.")
        server.add_prompt(Prompt.from_function(lambda: f"prompt {name}", name=name, description="added"))
        if ctx.session.protocol_version == "2026-07-28":  # modern: to subscriptions/listen streams only
            await ctx.notify_tools_changed()
            await ctx.notify_prompts_changed()
            await ctx.notify_resources_changed()
            if updated:  # to the streams subscribed to that resource
                await ctx.notify_resource_updated(updated)
        else:
            await ctx.session.send_tool_list_changed()
            await ctx.session.send_prompt_list_changed()
            await ctx.session.send_resource_list_changed()
        return f"added {name}"

    @server.resource("fixture://readme", name="readme", mime_type="text/plain",
                     description="A static text resource.")
    def readme() -> str:
        return "fixture readme\n"

    @server.resource("fixture://escapes", name="escapes", mime_type="text/plain")
    def escapes_resource() -> str:
        return ESCAPES_TEXT

    @server.resource("fixture://items/{item_id}", name="item", mime_type="application/json",
                     description="One item by id.")
    def item(item_id: str) -> str:
        return json.dumps({"id": item_id})

    @server.completion()
    async def complete(ref, argument, context):
        if isinstance(ref, ResourceTemplateReference) and argument.name == "item_id":
            values = [v for v in ITEMS if v.startswith(argument.value)]  # two at a time, as a long list is sent
            return Completion(values=values[:2], total=len(values), has_more=len(values) > 2)
        if argument.name == "name":
            return Completion(values=[v for v in ("Ada", "Alan") if v.startswith(argument.value)])
        return None

    roots_changed = [0]

    async def on_roots_changed(ctx, params) -> None:
        roots_changed[0] += 1

    server._lowlevel_server.add_notification_handler("notifications/roots/list_changed", NotificationParams,
                                                     on_roots_changed)

    @server.tool(description="What the client offers as roots: its capability, roots/list, list_changed count.")
    async def roots(ctx: Context) -> str:
        capabilities = ctx.session.client_capabilities
        offered = capabilities is not None and capabilities.roots is not None
        listed = [str(root.uri) for root in (await ctx.session.list_roots()).roots] if offered else None
        return json.dumps({"capability": offered, "roots": listed, "changed": roots_changed[0]})

    @server.prompt(description="Greet someone.")
    def greet(name: str) -> str:
        return f"Please greet {name} warmly."

    @server.prompt(description="Describe a picture.")
    def picture() -> list[Message]:
        return [UserMessage(Image(data=PNG_1X1, format="png")), AssistantMessage("A red pixel.")]

    return server


def serve_legacy_only() -> None:
    """A hand-written legacy-only stdio server.

    The SDK server always answers both eras (the first request decides), so a server
    that predates `server/discover` is emulated here: initialize handshake only,
    `-32601` for anything it does not know, including `server/discover`.
    """
    tools = [{"name": "echo", "description": "Echo the given text back.",
              "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                              "required": ["text"]}}]
    initialized = False
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if "id" not in msg or "method" not in msg:
            continue  # notifications and responses
        method, params = msg["method"], msg.get("params") or {}
        result = None
        error = None
        if method == "initialize":
            initialized = True
            result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "hostlink-legacy-fixture", "version": "1.0.0"}}
        elif method == "ping":
            result = {}
        elif method == "tools/list" and initialized:
            result = {"tools": tools}
        elif method == "tools/call" and initialized and params.get("name") == "echo":
            text = str((params.get("arguments") or {}).get("text", ""))
            result = {"content": [{"type": "text", "text": text}], "isError": False}
        else:
            error = {"code": -32601, "message": f"Method not found: {method}"}
        reply = {"jsonrpc": "2.0", "id": msg["id"]}
        reply.update({"error": error} if error else {"result": result})
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


def count_requests(app, counter: dict[str, int]):
    """ASGI wrapper: count every HTTP request by its path; `GET /count` answers the count of them
    all as JSON, `GET /count?path=P` the count of those to path P."""

    async def wrapped(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)
        if scope["method"] == "GET" and scope["path"] == "/count":
            query = parse_qs(scope["query_string"].decode())
            count = counter.get(query["path"][0], 0) if "path" in query else sum(counter.values())
            body = json.dumps({"count": count}).encode()
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"application/json")]})
            return await send({"type": "http.response.body", "body": body})
        counter[scope["path"]] = counter.get(scope["path"], 0) + 1
        return await app(scope, receive, send)

    return wrapped


def status_app(status: int):
    """ASGI app answering every request with `status` and a short plain-text body."""
    headers = [(b"content-type", b"text/plain")]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="fixture"'))
    if status == 503:
        headers.append((b"retry-after", b"1"))

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": f"fixture status {status}\n".encode()})

    return app


def require_bearer(app, token: str):
    """ASGI wrapper: 401 unless `Authorization: Bearer <token>`."""
    denied = status_app(401)
    expected = f"Bearer {token}".encode()

    async def wrapped(scope, receive, send):
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != expected:
            return await denied(scope, receive, send)
        return await app(scope, receive, send)

    return wrapped


def answer_status_paths(app):
    """ASGI wrapper: a request to `/status/N/…` is answered N (`status_app`), so that one server
    serves every status, each test at a path of its own; any other path goes to `app`."""
    statuses = {status: status_app(status) for status in STATUSES}

    async def wrapped(scope, receive, send):
        if scope["type"] == "http" and scope["path"].startswith("/status/"):
            status = int(scope["path"].split("/")[2])
            return await statuses[status](scope, receive, send)
        return await app(scope, receive, send)

    return wrapped


def listen(app) -> None:
    """Serve `app` (counting its requests) on 127.0.0.1:<ephemeral>; the URL is the first stdout line."""
    import socket

    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # connections wait in the backlog until uvicorn accepts, never refused
    port = sock.getsockname()[1]
    config = uvicorn.Config(count_requests(app, {}), log_level="warning", lifespan="on")
    print(f"http://127.0.0.1:{port}/mcp", flush=True)
    uvicorn.Server(config).run(sockets=[sock])


def serve_http(args: argparse.Namespace) -> None:
    """Streamable HTTP on 127.0.0.1:<ephemeral>; the URL is the first stdout line."""
    app = build_server().streamable_http_app(stateless_http=args.stateless)
    if args.require_bearer_env:
        app = require_bearer(app, os.environ[args.require_bearer_env])
    listen(answer_status_paths(app))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--legacy-only", action="store_true",
                        help="stdio: speak only the legacy initialize handshake")
    parser.add_argument("--fail-start", action="store_true",
                        help="stdio: write a message to stderr and exit 2 before any protocol")
    parser.add_argument("--start-delay", type=float, default=0.0,
                        help="sleep this many seconds before serving (setup in flight)")
    parser.add_argument("--http", action="store_true", help="serve Streamable HTTP on 127.0.0.1")
    parser.add_argument("--stateless", action="store_true", help="http: stateless sessions")
    parser.add_argument("--require-bearer-env", metavar="VAR",
                        help="http: 401 unless Authorization is 'Bearer $VAR'")
    parser.add_argument("--traced", action="store_true", help="stdio: with the trace_context tool")
    args = parser.parse_args()

    if args.fail_start:
        sys.stderr.write("fixture: configuration broken, refusing to start\n")
        sys.exit(2)
    if args.start_delay:
        time.sleep(args.start_delay)
    if args.http:
        serve_http(args)
    elif args.legacy_only:
        serve_legacy_only()
    else:
        build_server(args.traced).run("stdio")


if __name__ == "__main__":
    main()
