"""A registry search's paging bounds, against the loopback fixture registry: a cursor that cannot
be used and a search that runs past the page cap each stop with an error saying so; and a listing
names only the ways hostlink can run a server."""

from __future__ import annotations

import json

import anyio
import pytest

from hostlink.mcp.registry import client
from hostlink.mcp.registry.client import Registry, RegistryError, search_pages
from hostlink.mcp.registry.records import listing_line, listing_of
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


def test_a_listing_says_only_the_ways_hostlink_can_run_a_server():
    server = {**MEMORY["server"], "packages": [{"registryType": "cargo"}, {"registryType": "PyPI"}, "junk"],
              "remotes": [{"type": "websocket"}, {"type": "sse"}, {"type": "streamable-http"}]}
    listing = listing_of({**MEMORY, "server": server})
    assert listing.runs == ("pypi", "remote (sse)", "remote")
    assert listing_line(listing).splitlines()[0].endswith("(pypi, remote (sse), remote)")
