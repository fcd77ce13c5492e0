"""Provider events -> the Responses API's typed SSE events, numbered by `sequence_number`.

Order (what the `openai` SDK's `responses.stream()` needs to accumulate): `response.created`,
`response.in_progress`; per output item `response.output_item.added`, its parts and deltas
(`content_part.added` before any `output_text.delta`), their `.done` events and
`response.output_item.done`; then `response.completed` (`response.incomplete` when the
answer hit `max_output_tokens`) carrying the whole response. A failure after the start is an
`error` event and `response.failed`. `ResponsesWire` is what the app serves
`/v1/responses` with: the parse, both answers and the store they share.
"""

from __future__ import annotations

import json
from typing import Any

from hostlink.host import (
    AssistantMessage,
    Done,
    ErrorEvent,
    ProviderSpec,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
)
from hostlink.serve.core import ApiError, provider_error
from hostlink.serve.openai import error_body
from hostlink.serve.parsed import Parsed
from hostlink.serve.response_store import ResponseStore
from hostlink.serve.responses import (
    Exchange,
    call_item,
    final_status,
    message_item,
    new_id,
    output_items,
    parse,
    reasoning_item,
    response,
)

_ARGUMENT_PIECE = 256


class Streamer:
    def __init__(self, parsed: Parsed, wire: ResponsesWire) -> None:
        self._parsed = parsed
        self._wire = wire
        self._sequence = 0
        self._items: list[dict[str, Any]] = []  # finished output items
        self._open: dict[str, Any] | None = None  # the item being streamed (message or reasoning)
        self._text = ""

    def _event(self, kind: str, **data: Any) -> bytes:
        body = {"type": kind, "sequence_number": self._sequence, **data}
        self._sequence += 1
        return f"event: {kind}\ndata: {json.dumps(body, ensure_ascii=False)}\n\n".encode()

    def opening(self) -> bytes:
        state = response(self._parsed, "in_progress", [])
        return self._event("response.created", response=state) + self._event("response.in_progress", response=state)

    def _index(self) -> int:
        return len(self._items)

    def _start(self, item: dict[str, Any]) -> bytes:
        out = self._close()
        self._open, self._text = item, ""
        out += self._event("response.output_item.added", output_index=self._index(), item=item)
        where = {"item_id": item["id"], "output_index": self._index()}
        if item["type"] == "message":
            part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            out += self._event("response.content_part.added", content_index=0, part=part, **where)
        else:
            out += self._event("response.reasoning_summary_part.added", summary_index=0,
                               part={"type": "summary_text", "text": ""}, **where)
        return out

    def _close(self) -> bytes:
        item, self._open = self._open, None
        if item is None:
            return b""
        where = {"item_id": item["id"], "output_index": self._index()}
        if item["type"] == "message":
            done = message_item(item["id"], self._text)
            part = done["content"][0]
            out = self._event("response.output_text.done", content_index=0, text=self._text, logprobs=[], **where)
            out += self._event("response.content_part.done", content_index=0, part=part, **where)
        else:
            done = reasoning_item(item["id"], self._text)
            out = self._event("response.reasoning_summary_text.done", summary_index=0, text=self._text, **where)
            out += self._event("response.reasoning_summary_part.done", summary_index=0,
                               part={"type": "summary_text", "text": self._text}, **where)
        out += self._event("response.output_item.done", output_index=self._index(), item=done)
        self._items.append(done)
        return out

    def _delta(self, kind: str, delta: str, new: dict[str, Any]) -> bytes:
        out = b"" if self._open is not None and self._open["type"] == new["type"] else self._start(new)
        self._text += delta
        assert self._open is not None
        where = {"item_id": self._open["id"], "output_index": self._index()}
        if kind == "message":
            return out + self._event("response.output_text.delta", content_index=0, delta=delta, logprobs=[], **where)
        return out + self._event("response.reasoning_summary_text.delta", summary_index=0, delta=delta, **where)

    def feed(self, event: StreamEvent) -> bytes:
        if isinstance(event, TextDelta) and event.delta:
            return self._delta("message", event.delta, message_item(new_id("msg"), "", "in_progress"))
        if isinstance(event, ThinkingDelta) and event.delta:
            item = reasoning_item(new_id("rs"), "")
            return self._delta("reasoning", event.delta, {**item, "status": "in_progress"})
        if isinstance(event, ToolCallEvent):
            return self._call(event)
        if isinstance(event, Done):
            out = self._close()
            status = final_status(event.message)
            self._wire.remember(self._parsed, self._items)
            final = response(self._parsed, status, self._items, done=event.message)
            return out + self._event(f"response.{status}", response=final)
        if isinstance(event, ErrorEvent):
            return self.failed(provider_error(event))
        return b""

    def _call(self, event: ToolCallEvent) -> bytes:
        out = self._close()
        item_id, index = new_id("fc"), self._index()
        done = call_item(item_id, event.tool_call)
        out += self._event("response.output_item.added", output_index=index,
                           item=call_item(item_id, event.tool_call, "in_progress"))
        arguments = done["arguments"]
        for start in range(0, len(arguments), _ARGUMENT_PIECE):
            out += self._event("response.function_call_arguments.delta", item_id=item_id, output_index=index,
                               delta=arguments[start:start + _ARGUMENT_PIECE])
        out += self._event("response.function_call_arguments.done", item_id=item_id, output_index=index,
                           name=done["name"], arguments=arguments)
        out += self._event("response.output_item.done", output_index=index, item=done)
        self._items.append(done)
        return out

    def failed(self, error: ApiError) -> bytes:
        body = self._wire.error_body(error)["error"]
        out = self._event("error", code=body["code"] or body["type"], message=error.message, param=body["param"])
        return out + self._event("response.failed", response=response(self._parsed, "failed", self._items, error=error))


class ResponsesWire:
    """The Responses API as the app's wire: its parse, answers and error shape, over a store."""

    error_body = staticmethod(error_body)

    def __init__(self, store: ResponseStore) -> None:
        self.store = store

    def parse(self, payload: dict[str, Any], provider: ProviderSpec) -> Parsed:
        return parse(payload, provider, self.store)

    def message(self, parsed: Parsed, done: AssistantMessage) -> dict[str, Any]:
        output = output_items(done)
        self.remember(parsed, output)
        return response(parsed, final_status(done), output, done=done)

    def remember(self, parsed: Parsed, output: list[dict[str, Any]]) -> None:
        exchange: Exchange = parsed.store
        if exchange.store:
            self.store.add(exchange.response_id, exchange.items, output)

    def Streamer(self, parsed: Parsed) -> Streamer:
        return Streamer(parsed, self)
