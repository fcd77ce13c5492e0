"""The tool cache's bounds: a listing too large is not kept (and an older one goes), the oldest
entries go past MAX_FILES, and a cache that cannot be written is no error."""

from __future__ import annotations

import os

from hostlink.mcp.runtime import cache as cache_module
from hostlink.mcp.runtime.cache import ToolCache
from mcp_runtime_support import stdio


class Tool:
    title, meta, execution = None, None, None

    def __init__(self, name, description="d"):
        self.name, self.description, self.input_schema = name, description, {"type": "object"}


def test_a_listing_larger_than_the_bound_is_not_kept_and_the_older_entry_goes(tmp_path, monkeypatch):
    cache, config = ToolCache(tmp_path / "mcp-tools"), stdio(cacheTools=True)
    cache.store("fx", config, [Tool("echo")])
    assert [tool.name for tool in cache.load("fx", config)] == ["echo"]
    monkeypatch.setattr(cache_module, "MAX_FILE_BYTES", 4096)
    cache.store("fx", config, [Tool(f"tool{number}", "x" * 500) for number in range(10)])
    assert not cache._path("fx").exists() and cache.load("fx", config) is None


def test_past_max_files_the_least_recently_written_go(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_module, "MAX_FILES", 3)
    cache, config = ToolCache(tmp_path / "mcp-tools"), stdio(cacheTools=True)
    for age, name in enumerate(["a", "b", "c"]):
        cache.store(name, config, [Tool("echo")])
        os.utime(cache._path(name), (1000 + age, 1000 + age))
    cache.store("d", config, [Tool("echo")])
    assert [name for name in "abcd" if cache.load(name, config) is not None] == ["b", "c", "d"]
    assert len(list((tmp_path / "mcp-tools").glob("*.json"))) == 3


def test_a_cache_that_cannot_be_written_is_no_error(tmp_path):
    (tmp_path / "blocked").write_text("a file where the cache directory would be")
    cache, config = ToolCache(tmp_path / "blocked" / "mcp-tools"), stdio(cacheTools=True)
    cache.store("fx", config, [Tool("echo")])
    cache.drop("fx")
    assert cache.load("fx", config) is None
    assert (tmp_path / "blocked").read_text() == "a file where the cache directory would be"
