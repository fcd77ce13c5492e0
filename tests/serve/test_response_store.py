"""The Responses store's bounds: count and bytes, oldest first, item references with them."""

from __future__ import annotations

import pytest

from hostlink.serve.core import ApiError
from hostlink.serve.response_store import ResponseStore


def message(item_id: str, text: str) -> dict:
    return {"id": item_id, "type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}


def test_a_chain_shares_its_items_and_the_oldest_goes_first_past_the_count():
    store = ResponseStore(max_responses=2)
    first_out = message("msg_1", "one")
    store.add("resp_1", [{"role": "user", "content": "hi"}], [first_out])
    store.add("resp_2", [*store.conversation("resp_1"), {"role": "user", "content": "again"}],
              [message("msg_2", "two")])
    assert store.conversation("resp_2")[1] is first_out  # shared, not copied
    store.add("resp_3", [{"role": "user", "content": "new"}], [message("msg_3", "three")])
    assert len(store) == 2
    with pytest.raises(ApiError) as caught:
        store.conversation("resp_1")
    assert caught.value.status == 404 and caught.value.param == "previous_response_id"
    assert store.item("msg_1", "input.0.id") is first_out  # resp_2 still holds it
    store.add("resp_4", [], [])
    with pytest.raises(ApiError):
        store.item("msg_1", "input.0.id")  # gone with the last response that held it


def test_the_byte_bound_counts_what_each_response_added():
    store = ResponseStore(max_bytes=1200)
    store.add("resp_1", [{"role": "user", "content": "x" * 400}], [message("msg_1", "a")])
    store.add("resp_2", [*store.conversation("resp_1")], [message("msg_2", "y" * 400)])
    assert len(store) == 2 and store.bytes < 1200  # the shared items count once
    store.add("resp_3", [{"role": "user", "content": "z" * 600}], [])
    assert len(store) == 1 and store.bytes <= 1200  # resp_1 and resp_2 went; their items with them
    store.conversation("resp_3")
    with pytest.raises(ApiError):
        store.item("msg_2", "input.0.id")
