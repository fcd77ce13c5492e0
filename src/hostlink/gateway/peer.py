"""The MCP hosts at the other end, as the host session's `ask` and `complete`.

An upstream server's question (elicitation), model request (sampling) or `roots/list`
belongs to the MCP host call that is with that server: it goes to that call's MCP host, as a
request related to the call, when the MCP host declared the capability (and the server's
entry opted in, which the MCP extension checks). A request that belongs to no call, or to
calls of several MCP hosts at once (one server connection serves them all, and nothing in
its request says which), goes to no MCP host: it is declined, as in any host that cannot
ask, and roots are the gateway's own. A sampling request's approval is the MCP host's own
(MCP hosts show sampling requests to their user), so the extension's confirmation question
is answered by that capability.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import anyio

from hostlink.gateway.hosts import host_connection
from hostlink.host import (
    Answer,
    AssistantMessage,
    CancelSignal,
    Context,
    Done,
    ErrorEvent,
    ImageContent,
    Question,
    StreamEvent,
    TextContent,
)
from hostlink.host.output import one_line

SAMPLING_MAX_TOKENS = 4096  # asked of the MCP host; the extension cuts to the entry's own bound
ROOTS_WAIT_SECONDS = 10
MAX_ROOTS = 100
LINK_WAIT_SECONDS = 120  # how long an offered authorization link waits for the person's answer


@dataclass(frozen=True, eq=False)
class _Call:
    ctx: Any  # the SDK's request context of the MCP host's request
    server: str | None  # the server it is with; None: any (a listing of every server)


class Peer:
    """The MCP hosts' calls in flight, each with the server it is with."""

    def __init__(self) -> None:
        self._calls: list[_Call] = []

    @contextmanager
    def serving(self, ctx: Any, server: str | None = None) -> Iterator[None]:
        call = _Call(ctx, server)
        self._calls.append(call)
        try:
            yield
        finally:
            self._calls.remove(call)

    def _current(self, capability: str) -> Any | None:
        """The request context a server's request belongs to, when its MCP host declared
        `capability`: the newest call with the asking server, if all such calls are one
        MCP host's; else None."""
        import mcp_types

        from hostlink.mcp import asking_server

        server = asking_server()
        calls = [call for call in self._calls if server is not None and call.server in (None, server)]
        if len({id(host_connection(call.ctx)) for call in calls}) != 1:
            return None
        ctx = calls[-1].ctx
        wanted = {
            "form": mcp_types.ClientCapabilities(
                elicitation=mcp_types.ElicitationCapability(form=mcp_types.FormElicitationCapability())),
            "sampling": mcp_types.ClientCapabilities(sampling=mcp_types.SamplingCapability()),
            "roots": mcp_types.ClientCapabilities(roots=mcp_types.RootsCapability()),
        }[capability]
        return ctx if _declared(ctx, wanted) else None

    async def ask(self, question: Question) -> Answer:
        """A server's form to the MCP host (form elicitation); a sampling confirmation (a form
        without fields) is the MCP host's sampling approval."""
        if not question.fields.get("properties"):
            return Answer("accept" if self._current("sampling") is not None else "decline")
        ctx = self._current("form")
        if ctx is None:
            return Answer("decline")
        try:
            result = await ctx.session.elicit_form(f"MCP server {question.asker!r} asks: {question.message}",
                                                   dict(question.fields), related_request_id=ctx.request_id)
        except Exception:  # noqa: BLE001 - the MCP host could not be asked (its connection has no way back)
            return Answer("cancel")
        return Answer(result.action, result.content)

    async def complete(self, model: str, context: Context, signal: CancelSignal) -> AsyncIterator[StreamEvent]:
        """A server's sampling request answered by the MCP host's model (`model` is a hint)."""
        import mcp_types

        ctx = self._current("sampling")
        if ctx is None:
            yield ErrorEvent("the MCP host did not declare sampling", code="unavailable")
            return
        messages = []
        for message in context.messages:
            for item in message.content:
                block: Any = (mcp_types.TextContent(type="text", text=item.text) if isinstance(item, TextContent)
                              else mcp_types.ImageContent(type="image", data=item.data, mime_type=item.mime_type)
                              if isinstance(item, ImageContent) else None)
                if block is not None:
                    messages.append(mcp_types.SamplingMessage(role=message.role, content=block))
        hint = mcp_types.ModelPreferences(hints=[mcp_types.ModelHint(name=model.partition("/")[2] or model)])
        request = mcp_types.CreateMessageRequest(params=mcp_types.CreateMessageRequestParams(
            messages=messages, max_tokens=SAMPLING_MAX_TOKENS, system_prompt=context.system_prompt or None,
            model_preferences=hint))
        try:
            result = await ctx.session.send_request(request, mcp_types.CreateMessageResult, metadata=_related(ctx))
        except Exception as error:  # noqa: BLE001 - the MCP host's refusal is the answer
            yield ErrorEvent(f"the MCP host did not answer: {one_line(str(error), 200)}")
            return
        blocks = result.content if isinstance(result.content, list) else [result.content]
        text = "".join(block.text for block in blocks if getattr(block, "type", None) == "text")
        yield Done(AssistantMessage([TextContent(text)], model=one_line(result.model, 100)))

    async def roots(self) -> list[tuple[str, str | None]] | None:
        """The MCP host's roots (URI, name), when it declared roots and answers; else None."""
        ctx = self._current("roots")
        if ctx is None:
            return None
        import mcp_types

        try:
            with anyio.fail_after(ROOTS_WAIT_SECONDS):
                listed = await ctx.session.send_request(mcp_types.ListRootsRequest(), mcp_types.ListRootsResult,
                                                        metadata=_related(ctx))
        except Exception:  # noqa: BLE001 - no answer: the session's own root, if any
            return None
        return [(str(root.uri), one_line(root.name, 100) if root.name else None) for root in listed.roots[:MAX_ROOTS]]

    async def offer_link(self, ctx: Any, server: str, link: str) -> None:
        """Offer a sign-in's authorization link, to the MCP host whose request `ctx` started
        the sign-in, through URL-mode elicitation when it declared that."""
        import secrets

        import mcp_types

        if not _declared(ctx, mcp_types.ClientCapabilities(
                elicitation=mcp_types.ElicitationCapability(url=mcp_types.UrlElicitationCapability()))):
            return
        with anyio.move_on_after(LINK_WAIT_SECONDS):
            try:
                await ctx.session.elicit_url(f"MCP server {server!r} needs you to sign in", link,
                                             secrets.token_hex(8), related_request_id=ctx.request_id)
            except Exception:  # noqa: BLE001 - the link is in the tool's answer all the same
                pass


def _declared(ctx: Any, capability: Any) -> bool:
    try:
        return bool(ctx.session.check_client_capability(capability))
    except Exception:  # noqa: BLE001 - a connection without the capability check cannot be asked
        return False


def _related(ctx: Any) -> Any:
    """A request to the MCP host as part of its request `ctx` (over HTTP: on that request's stream)."""
    from mcp.shared.message import ServerMessageMetadata

    return ServerMessageMetadata(related_request_id=ctx.request_id)
