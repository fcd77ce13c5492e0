"""Stored Responses (`store: true`, the API's default), in memory only, bounded.

Each stored response keeps its conversation — the input items it was given, references
resolved and previous responses included, then its own output items — so
`previous_response_id` continues it and `item_reference` finds any of those items by
`id`. Items are shared between the responses of one chain, not copied. The store holds at
most `MAX_RESPONSES` responses and `MAX_BYTES` of items (each item held counted
once, as JSON); past either bound the oldest responses go first, and an item goes with the
last response that holds it. Nothing is ever written to disk; a stopped server forgets
everything.
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
        self._responses: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()
        self._held: dict[int, list[Any]] = {}  # id(item) -> [item, responses holding it, its size]
        self._items: dict[str, dict[str, Any]] = {}  # item id -> item, while a response holds it
        self.bytes = 0  # each held item once, as JSON

    def conversation(self, response_id: str) -> list[dict[str, Any]]:
        """The stored conversation of `response_id` (its input and output items)."""
        try:
            return list(self._responses[response_id])
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
        items = [*inputs, *output]
        self._responses[response_id] = items
        for item in items:
            held = self._held.get(id(item))
            if held is not None:
                held[1] += 1
                continue
            size = len(json.dumps(item, ensure_ascii=False))
            self._held[id(item)] = [item, 1, size]
            self.bytes += size
            if isinstance(item.get("id"), str):
                self._items[item["id"]] = item
        while self._responses and (len(self._responses) > self.max_responses or self.bytes > self.max_bytes):
            self._drop_oldest()

    def _drop_oldest(self) -> None:
        _, items = self._responses.popitem(last=False)
        for item in items:
            held = self._held[id(item)]
            held[1] -= 1
            if held[1] == 0:
                del self._held[id(item)]
                self.bytes -= held[2]
                item_id = item.get("id")
                if isinstance(item_id, str) and self._items.get(item_id) is item:
                    del self._items[item_id]

    def __len__(self) -> int:
        return len(self._responses)
