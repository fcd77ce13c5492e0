"""Reading a request body: bounded in size while it arrives, parsed as JSON bounded in depth.

Every route that takes a JSON body reads it through `read_json`, after its request has
been admitted (a generation request holds its slot first), so the memory bodies can take is
bounded by the slots: one buffer of at most `MAX_BODY_BYTES` per admitted request. The
buffer is released as soon as it is decoded, and every failure is an `ApiError` (400
or 413), never a traceback: a nesting bomb (`[` x 100,000) stops the C parser at Python's
recursion limit, and anything deeper than `MAX_JSON_DEPTH` is refused before any code
walks it recursively (`json.dumps` of a 964-level tool schema would fail the same way).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from hostlink.host.jsondepth import json_depth_over
from hostlink.serve.core import ApiError, invalid

MAX_BODY_BYTES = 32 * 1024 * 1024
MAX_JSON_DEPTH = 64
Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]


class ClientGone(Exception):
    """The client disconnected before its body arrived: nothing to answer."""


def _too_large(limit: int) -> ApiError:
    return ApiError(413, "too_large", f"the request body is over {limit // (1024 * 1024)} MiB")


async def read_body(scope: Scope, receive: Receive, limit: int = MAX_BODY_BYTES) -> bytearray:
    """The whole body, refused with 413 as soon as it announces or reaches more than `limit` bytes.

    With a `content-length` the buffer is allocated once at that size (growing it would
    copy it on the way); a chunked body grows as it comes.
    """
    declared = next((int(value) for key, value in scope.get("headers", ())
                     if key.lower() == b"content-length" and value.isdigit()), None)
    if declared is not None and declared > limit:
        raise _too_large(limit)
    body = bytearray(declared or 0)
    size, more = 0, True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        chunk = message.get("body", b"")
        if size + len(chunk) > limit:
            raise _too_large(limit)
        body[size:size + len(chunk)] = chunk
        size += len(chunk)
        more = message.get("more_body", False)
    del body[size:]
    return body


def parse_json_object(body: bytearray) -> dict[str, Any]:
    """The body as a JSON object no deeper than `MAX_JSON_DEPTH`; `body` is emptied."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise invalid("", "the request body is not UTF-8") from None
    finally:
        body.clear()  # the text replaces it: one copy of the body alive, not two
    try:
        payload = json.loads(text)
    except ValueError:
        raise invalid("", "the request body is not valid JSON") from None
    except RecursionError:
        raise _too_deep() from None
    finally:
        del text
    if not isinstance(payload, dict):
        raise invalid("", "the request body must be a JSON object")
    if json_depth_over(payload, MAX_JSON_DEPTH):
        raise _too_deep()
    return payload


async def read_json(scope: Scope, receive: Receive) -> dict[str, Any]:
    """`read_body` then `parse_json_object`: the one way a route reads its JSON."""
    return parse_json_object(await read_body(scope, receive))


def _too_deep() -> ApiError:
    return invalid("", f"the request JSON is nested more than {MAX_JSON_DEPTH} levels deep")
