"""A fake Anthropic Messages API on 127.0.0.1 for driving the real `claude` CLI offline.

Stdlib only. Each POST to `/v1/messages` takes the next scripted `Reply` from a
queue (or the default reply when the queue is empty) and answers it as streaming SSE the way
the real API does: `message_start`, `content_block_start/delta/stop` for text, thinking
and tool_use (`input_json_delta`), `message_delta` with stop_reason and usage,
`message_stop`. Scripted HTTP errors (429/5xx, overflow or usage-limit wording) answer with
the API's JSON error body. Every request body is recorded, so tests can check the transcript
the CLI actually sent.

Run as a script (`python fake_anthropic.py`) it prints its base URL and serves plain text
answers until killed (used by the benchmark).
"""

from __future__ import annotations

import itertools
import json
import queue
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_ids = itertools.count(1)


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Thinking:
    thinking: str


@dataclass(frozen=True)
class ToolUse:
    """A tool_use block; `raw_input` (if given) is sent verbatim instead of `input`."""

    name: str
    input: dict[str, Any] = field(default_factory=dict)
    id: str = ""
    raw_input: str | None = None


@dataclass(frozen=True)
class Reply:
    """One streamed answer. `chunk` splits every text/JSON delta into pieces that size."""

    blocks: tuple[Text | Thinking | ToolUse, ...]
    stop_reason: str = "end_turn"
    input_tokens: int = 11
    output_tokens: int = 7
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    chunk: int = 8
    # Send an SSE ``error`` event after this many blocks instead of finishing normally.
    error_after_blocks: int | None = None
    error_type: str = "overloaded_error"
    error_message: str = "Overloaded"
    # Pause after the last content block (before message_delta), e.g. to let a client act on it.
    delay_before_delta: float = 0.0


@dataclass(frozen=True)
class HttpError:
    """A non-streaming error answer with the API's JSON error body."""

    status: int
    error_type: str
    message: str


def text(value: str, **kwargs: Any) -> Reply:
    return Reply((Text(value),), **kwargs)


def tool_use(name: str, arguments: dict[str, Any] | None = None, **kwargs: Any) -> Reply:
    return Reply((ToolUse(name, arguments or {}),), stop_reason="tool_use", **kwargs)


def overflow() -> HttpError:
    return HttpError(400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum")


def usage_limit(resets_at: int | None = None) -> HttpError:
    """The subscription's usage-limit error, which ends in `|<unix time it resets>`
    (an hour from now unless given)."""
    resets_at = int(time.time()) + 3600 if resets_at is None else resets_at
    return HttpError(429, "rate_limit_error", f"Claude AI usage limit reached|{resets_at}")


def plan_headers(status: str = "allowed", *, window: str = "five_hour", resets_at: int | None = None,
                 utilization: float = 0.42, overage_status: str = "allowed", overage_in_use: bool = False,
                 disabled_reason: str | None = None) -> dict[str, str]:
    """The `anthropic-ratelimit-unified-*` headers the API sends a subscription (the
    representative `window`, `5h` or `7d`, resetting in an hour unless given)."""
    resets_at = int(time.time()) + 3600 if resets_at is None else resets_at
    short = {"five_hour": "5h", "seven_day": "7d"}[window]
    headers = {
        "anthropic-ratelimit-unified-status": status,
        "anthropic-ratelimit-unified-reset": str(resets_at),
        "anthropic-ratelimit-unified-representative-claim": window,
        f"anthropic-ratelimit-unified-{short}-utilization": str(utilization),
        f"anthropic-ratelimit-unified-{short}-reset": str(resets_at),
        "anthropic-ratelimit-unified-overage-status": overage_status,
    }
    if status == "allowed_warning":  # the CLI reports a warning only past a threshold
        headers[f"anthropic-ratelimit-unified-{short}-surpassed-threshold"] = "0.9"
    if overage_in_use:
        headers["anthropic-ratelimit-unified-overage-in-use"] = "true"
    if disabled_reason is not None:
        headers["anthropic-ratelimit-unified-overage-disabled-reason"] = disabled_reason
    return headers


def drawing_extra_usage(resets_at: int | None = None) -> dict[str, str]:
    """The headers of an answer drawn from extra usage: the 5-hour window used up."""
    return plan_headers("rejected", resets_at=resets_at, utilization=1, overage_in_use=True)


def server_error() -> HttpError:
    return HttpError(500, "api_error", "Internal server error")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client gone mid-answer (a claude stopped by its request) is expected: no traceback."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FakeAnthropic:
    """The server. Use as a context manager; `base_url` is what ANTHROPIC_BASE_URL takes."""

    def __init__(self, default: Reply | HttpError | None = None) -> None:
        self.default = default if default is not None else text("default answer")
        self.script: queue.Queue[Reply | HttpError] = queue.Queue()
        self.requests: list[dict[str, Any]] = []
        # Sent with every /v1/messages answer, as the real API sends its rate-limit headers.
        self.headers: dict[str, str] = {}
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _handler_for(self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def push(self, *replies: Reply | HttpError) -> None:
        for reply in replies:
            self.script.put(reply)

    def messages_requests(self) -> list[dict[str, Any]]:
        """Recorded bodies of the `/v1/messages` requests, in order."""
        with self._lock:
            return [r["body"] for r in self.requests if r["path"].split("?")[0] == "/v1/messages"]

    def __enter__(self) -> FakeAnthropic:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _record(self, path: str, headers: dict[str, str], body: Any) -> None:
        with self._lock:
            self.requests.append({"path": path, "headers": headers, "body": body})

    def _next(self) -> Reply | HttpError:
        try:
            return self.script.get_nowait()
        except queue.Empty:
            return self.default


def _handler_for(fake: FakeAnthropic) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:  # quiet
            pass

        def do_GET(self) -> None:
            fake._record(self.path, dict(self.headers), None)
            self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": "not found"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = {"unparsed": raw.decode("utf-8", "replace")}
            fake._record(self.path, dict(self.headers), body)
            route = self.path.split("?")[0]
            if route == "/v1/messages/count_tokens":
                self._json(200, {"input_tokens": 42})
                return
            if route != "/v1/messages":
                self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": "not found"}})
                return
            reply = fake._next()
            if isinstance(reply, HttpError):
                error = {"type": reply.error_type, "message": reply.message}
                self._json(reply.status, {"type": "error", "error": error})
                return
            model = body.get("model", "claude-test") if isinstance(body, dict) else "claude-test"
            self._stream(reply, model)

        def _json(self, status: int, value: Any) -> None:
            data = json.dumps(value).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("request-id", f"req_fake_{next(_ids)}")
            self._extra_headers()
            self.end_headers()
            self.wfile.write(data)

        def _extra_headers(self) -> None:
            for name, value in dict(fake.headers).items():
                self.send_header(name, value)

        def _stream(self, reply: Reply, model: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.send_header("request-id", f"req_fake_{next(_ids)}")
            self._extra_headers()
            self.end_headers()
            self.close_connection = True
            for event, data in _events(reply, model):
                if event == "message_delta" and reply.delay_before_delta:
                    time.sleep(reply.delay_before_delta)
                self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()

    return Handler


def _pieces(value: str, size: int) -> list[str]:
    return [value[i : i + size] for i in range(0, len(value), size)] or [""]


def _events(reply: Reply, model: str):
    usage = {
        "input_tokens": reply.input_tokens,
        "output_tokens": 1,
        "cache_read_input_tokens": reply.cache_read_input_tokens,
        "cache_creation_input_tokens": reply.cache_creation_input_tokens,
    }
    yield "message_start", {
        "type": "message_start",
        "message": {
            "id": f"msg_fake_{next(_ids)}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage,
        },
    }
    for index, block in enumerate(reply.blocks):
        if reply.error_after_blocks is not None and index >= reply.error_after_blocks:
            break
        if isinstance(block, Text):
            yield "content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": {"type": "text", "text": ""}}
            for piece in _pieces(block.text, reply.chunk):
                yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                              "delta": {"type": "text_delta", "text": piece}}
        elif isinstance(block, Thinking):
            yield "content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": {"type": "thinking", "thinking": "", "signature": ""}}
            for piece in _pieces(block.thinking, reply.chunk):
                yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                              "delta": {"type": "thinking_delta", "thinking": piece}}
            yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                          "delta": {"type": "signature_delta", "signature": "fakesig"}}
        else:
            block_id = block.id or f"toolu_fake_{next(_ids)}"
            yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": {
                "type": "tool_use", "id": block_id, "name": block.name, "input": {}}}
            raw = block.raw_input if block.raw_input is not None else json.dumps(block.input)
            for piece in _pieces(raw, reply.chunk):
                yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                              "delta": {"type": "input_json_delta", "partial_json": piece}}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    if reply.error_after_blocks is not None:
        yield "error", {"type": "error", "error": {"type": reply.error_type, "message": reply.error_message}}
        return
    yield "message_delta", {
        "type": "message_delta",
        "delta": {"stop_reason": reply.stop_reason, "stop_sequence": None},
        "usage": {"output_tokens": reply.output_tokens},
    }
    yield "message_stop", {"type": "message_stop"}


def main() -> None:
    with FakeAnthropic() as fake:
        print(fake.base_url, flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    sys.exit(main())
