"""Stored Responses (``store: true``, the API's default), in memory only, bounded.

Each stored response keeps its conversation — the input items it was given, references
resolved and previous responses included, then its own output items — so
``previous_response_id`` continues it and ``item_reference`` finds any of those items by
``id``. Items are shared between the responses of one chain, not copied. The store holds at
most :data:`MAX_RESPONSES` responses and :data:`MAX_BYTES` of the items each one added (its
new input and its output, measured as JSON); past either bound the oldest go first. Nothing
is ever written to disk; a stopped server forgets everything.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

from hostlink.serve.core import ApiError

MAX_RESPONSES = 512
MAX_BYTES = 64 * 1024 * 1024


class ResponseStore:
    def __init__(self, max_responses: int = MAX_RESPONSES, max_bytes: int = MAX_BYTES) -> None:
        self.max_responses = max_responses
        self.max_bytes = max_bytes
        self._responses: OrderedDict[str, tuple[list[dict[str, Any]], int]] = OrderedDict()
        self._items: dict[str, dict[str, Any]] = {}
        self._owner: dict[str, str] = {}  # item id -> the response that added it
        self.bytes = 0

    def conversation(self, response_id: str) -> list[dict[str, Any]]:
        """The stored conversation of ``response_id`` (its input and output items)."""
        try:
            return list(self._responses[response_id][0])
        except KeyError:
            raise ApiError(404, "not_found", f"previous_response_id: no stored response {response_id[:80]!r} "
                                             "(unknown, stored with store: false, or dropped as the oldest)",
                           param="previous_response_id") from None

    def item(self, item_id: str, path: str) -> dict[str, Any]:
        try:
            return self._items[item_id]
        except KeyError:
            raise ApiError(404, "not_found", f"{path}: no stored item {item_id[:80]!r}", param=path) from None

    def add(self, response_id: str, inputs: list[dict[str, Any]], output: list[dict[str, Any]]) -> None:
        new = [item for item in (*inputs, *output) if not isinstance(item.get("id"), str)
               or self._items.get(item["id"]) is not item]
        size = sum(len(json.dumps(item, ensure_ascii=False)) for item in new)
        self._responses[response_id] = ([*inputs, *output], size)
        self.bytes += size
        for item in new:
            if isinstance(item.get("id"), str):
                self._items[item["id"]] = item
                self._owner[item["id"]] = response_id
        while self._responses and (len(self._responses) > self.max_responses or self.bytes > self.max_bytes):
            self._drop_oldest()

    def _drop_oldest(self) -> None:
        dropped, (_, size) = self._responses.popitem(last=False)
        self.bytes -= size
        for item_id in [key for key, owner in self._owner.items() if owner == dropped]:
            del self._owner[item_id]
            del self._items[item_id]

    def __len__(self) -> int:
        return len(self._responses)
