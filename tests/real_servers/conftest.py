"""The real-servers lane: one `Lane` per module (tests/real_servers_support.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from real_servers_support import Lane, lane_in


@pytest.fixture(scope="module")
def lane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lane]:
    yield from lane_in(tmp_path_factory)
