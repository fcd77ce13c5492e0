"""A registry search's paging bounds, against the loopback fixture registry: a cursor that cannot
be used and a search that runs past the page cap each stop with an error saying so."""

from __future__ import annotations

import json

import anyio
import pytest

from hostlink.mcp.registry import client
from hostlink.mcp.registry.client import Registry, RegistryError, search_pages
from registry_support import MEMORY, fixture_registry


def test_an_unusable_cursor_stops_the_search():
    with fixture_registry() as registry:
        registry.answers["/v0.1/servers"] = (200, json.dumps({"servers": [MEMORY],
                                                               "metadata": {"nextCursor": "c" * 1025}}).encode())
        with pytest.raises(RegistryError, match=rf"^the registry {registry.url} answered an unusable cursor$"):
            anyio.run(search_pages, Registry(registry.url, "test"), "", 100)


def test_a_search_past_the_page_cap_stops_and_says_to_narrow_it(monkeypatch):
    monkeypatch.setattr(client, "MAX_PAGES", 2)
    records = [{**MEMORY, "server": {**MEMORY["server"], "name": f"io.example/s{number}"}} for number in range(150)]
    with fixture_registry(records) as registry:
        with pytest.raises(RegistryError, match=rf"^the registry {registry.url} answered more than 2 pages; "
                                                r"the search stopped \(narrow it down\)$"):
            anyio.run(search_pages, Registry(registry.url, "test"), "", 1000)
        assert len(registry.paths) == 2
