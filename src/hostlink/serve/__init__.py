"""`hostlink serve`: the Claude Code provider behind a local Anthropic Messages, OpenAI Chat
Completions and OpenAI Responses endpoint, a host like the CLI and the llm plugin.

`create_app` makes the ASGI app over a started `HostSession`
(mount it in another Starlette/FastAPI app, or test it in-process); `hostlink.serve.server`
runs it with uvicorn on a loopback address. The client keeps its tools: Claude's proposals come
back as `tool_use` blocks / `tool_calls` and nothing is executed by Claude or hostlink.
`/` is a status page for a person at a browser, behind the same key (`hostlink.serve.status`).
"""

from __future__ import annotations

from hostlink.serve.app import ServeState, create_app
from hostlink.serve.body import MAX_BODY_BYTES

__all__ = ["MAX_BODY_BYTES", "ServeState", "create_app"]
