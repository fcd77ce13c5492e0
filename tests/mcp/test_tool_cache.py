"""The opt-in tool cache and list_changed, against the SDK fixture server: the tests about whether a
server process starts run it over stdio, as hostlink starts it; the others ask the module's one
server over HTTP (`web`), each adding tools of its own names."""

from __future__ import annotations

import json
import os
import stat

import anyio
import pytest

from hostlink.mcp.extension import McpExtension
from hostlink.mcp.runtime.cache import ToolCache, cache_directory, fingerprint
from hostlink.mcp.runtime.clients import McpRuntime
from mcp_runtime_support import Host, fixture_children, stdio, text

pytestmark = pytest.mark.anyio


def servers(**fields):
    return {name: stdio(cacheTools=True, **fields) for name in ("one", "two", "three")}


def shared(web):
    """Three cached servers that are the module's one HTTP fixture server."""
    return {name: web.config(cacheTools=True) for name in ("one", "two", "three")}


def extension(tmp_path, configs):
    return McpExtension(servers=configs, environ={"XDG_CACHE_HOME": str(tmp_path / "cache")})


def cache_files(tmp_path):
    directory = tmp_path / "cache" / "hostlink" / "mcp-tools"
    return sorted(directory.glob("*.json")) if directory.exists() else []


def cached_names(cache):
    return [tool["name"] for tool in json.loads(cache._path("fx").read_text())["tools"]]


async def wait_for(condition, seconds=10.0):
    with anyio.fail_after(seconds):
        while not condition():
            await anyio.sleep(0.05)


async def test_a_search_after_one_session_starts_no_server(tmp_path, runtime_dir):
    async with Host(extension(tmp_path, servers()), tmp_path) as host:
        first = text(await host.run(action="tools", query="echo"))
        assert len(fixture_children()) == 3
    assert fixture_children() == []
    files = cache_files(tmp_path)
    assert len(files) == 3
    assert stat.S_IMODE(files[0].parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(files[0].parent.parent.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(path.stat().st_mode) == 0o600 for path in files)
    assert "app_only" not in files[0].read_text()  # only what the model may see is kept

    async with Host(extension(tmp_path, servers()), tmp_path) as host:
        again = text(await host.run(action="tools", query="echo"))
        assert fixture_children() == []  # the process table has no server: none was started
        assert again == first
        assert all(host.extension.runtime.snapshot(name).state == "idle" for name in ("one", "two", "three"))
        # a call always connects and checks the live listing
        assert text(await host.run(action="call", server="two", tool="echo", args={"text": "hi"})) == "hi"
        assert len(fixture_children()) == 1


async def test_a_call_checks_the_live_listing_not_the_cache(tmp_path, runtime_dir, web):
    config = shared(web)
    async with Host(extension(tmp_path, config), tmp_path) as host:
        await host.run(action="tools", server="one")
    path = cache_files(tmp_path)[0]
    entries = [json.loads(p.read_text()) for p in cache_files(tmp_path)]
    for p, entry in zip(cache_files(tmp_path), entries, strict=True):
        entry["tools"].append({"name": "ghost", "title": None, "description": "cached only", "inputSchema": {}})
        p.write_text(json.dumps(entry))
    async with Host(extension(tmp_path, config), tmp_path) as host:
        assert "ghost" in text(await host.run(action="tools", server="one", query="cached"))
        result = await host.run(action="call", server="one", tool="ghost", args={})
        assert result.is_error and "does not offer a tool named 'ghost'" in text(result)
    assert path.exists() and "ghost" not in path.read_text()  # the live listing replaced it


async def test_a_changed_configuration_drops_the_entry(tmp_path, runtime_dir, web):
    """'two' is a process of its own, the others the module's HTTP server: each is seen being asked."""
    configs = {**shared(web), "two": stdio(cacheTools=True)}
    async with Host(extension(tmp_path, configs), tmp_path) as host:
        await host.run(action="tools")
    changed = {**configs, "two": stdio(cacheTools=True, excludeTools=["echo"])}
    asked = web.count()
    async with Host(extension(tmp_path, changed), tmp_path) as host:
        found = text(await host.run(action="tools", query="echo"))
        assert len(fixture_children()) == 1 and web.count() == asked  # only the changed server is asked
        assert "server 'two'" not in found and "server 'one'" in found
    entry = json.loads(ToolCache(cache_directory({"XDG_CACHE_HOME": str(tmp_path / "cache")}))
                       ._path("two").read_text())
    assert entry["fingerprint"] == fingerprint("two", changed["two"])
    assert "echo" not in [tool["name"] for tool in entry["tools"]]


async def test_without_cache_tools_nothing_is_written(tmp_path, runtime_dir, web):
    async with Host(extension(tmp_path, {"fx": web.config()}), tmp_path) as host:
        await host.run(action="tools")
        await host.run(action="call", server="fx", tool="change_tools", args={"name": "never_cached"})
    assert not (tmp_path / "cache").exists()


async def test_the_entry_expires_after_the_ttl_and_bad_entries_are_ignored(tmp_path):
    now = [1000.0]
    cache = ToolCache(tmp_path / "c" / "mcp-tools", ttl=60, clock=lambda: now[0])
    config = stdio(cacheTools=True)

    class Tool:
        name, title, description = "echo", None, "d\x1b[31m"
        input_schema, meta, execution = {"type": "object"}, None, None

    cache.store("fx", config, [Tool()])
    assert [(t.name, t.description) for t in cache.load("fx", config)] == [("echo", "d")]
    assert cache.load("fx", stdio(cacheTools=True, requestTimeoutMs=999)) is None  # another configuration
    assert not cache._path("fx").exists()
    cache.store("fx", config, [Tool()])
    now[0] -= 1  # stored ahead of the clock: never trusted to expire
    assert cache.load("fx", config) is None and not cache._path("fx").exists()
    now[0] += 1
    cache.store("fx", config, [Tool()])
    now[0] += 61
    assert cache.load("fx", config) is None and not cache._path("fx").exists()
    for bad in (b"not json", b'{"format": 1}', json.dumps({"format": 1, "fingerprint": fingerprint("fx", config),
                                                            "stored": now[0], "tools": [{"name": "\x1b"}]}).encode()):
        cache._path("fx").write_bytes(bad)
        assert cache.load("fx", config) is None
    os.symlink(tmp_path / "elsewhere", cache._path("fx"))
    assert cache.load("fx", config) is None


async def test_reconnect_drops_the_entry(tmp_path, runtime_dir, web):
    cache = ToolCache(tmp_path / "c")
    runtime = McpRuntime({"fx": web.config(cacheTools=True)}, cache=cache)
    try:
        await runtime.list_tools("fx")
        assert cache._path("fx").exists()
        await runtime.reconnect("fx")
        assert not cache._path("fx").exists()
    finally:
        await runtime.aclose()


@pytest.mark.parametrize("version", ["legacy", "auto"])
async def test_list_changed_refreshes_the_listing_and_the_cache(tmp_path, runtime_dir, version, web):
    cache = ToolCache(tmp_path / "c")
    runtime = McpRuntime({"fx": web.config(cacheTools=True, protocolVersion=version)}, cache=cache)
    added, second, third = (f"{name}_{version}" for name in ("added", "second", "third"))
    try:
        before = await runtime.list_tools("fx")
        assert added not in [tool.name for tool in before]
        assert added not in cached_names(cache)
        async with anyio.create_task_group() as group:
            slow = []

            async def call_slow() -> None:
                slow.append(await runtime.call_tool("fx", "slow", {"seconds": 1.0}))

            group.start_soon(call_slow)
            await anyio.sleep(0.2)
            for name in (added, second, third):  # three notices each of three kinds
                await runtime.call_tool("fx", "change_tools", {"name": name})
            await wait_for(lambda: third in [tool.name for tool in runtime.snapshot("fx").tools])
        assert not slow[0].is_error and "slept" in slow[0].content[0].text  # the call in flight went on
        names = [tool.name for tool in runtime.snapshot("fx").tools]
        assert {added, second, third} <= set(names)
        assert third in cached_names(cache)
        assert await runtime.list_tools("fx", refresh=False) == runtime.snapshot("fx").tools
    finally:
        await runtime.aclose()


async def test_a_notice_while_listing_costs_one_more_listing(tmp_path, runtime_dir, web):
    runtime = McpRuntime({"fx": web.config(protocolVersion="legacy")})
    pages = []
    try:
        await runtime.list_tools("fx")
        lister = runtime._conns["fx"].lister
        page = lister._page

        async def counted(cursor):
            pages.append(cursor)
            await anyio.sleep(0.3)
            return await page(cursor)

        lister._page = counted
        notice = type("Notice", (), {"method": "notifications/tools/list_changed"})()
        await lister.on_message(notice)
        await anyio.sleep(0.1)  # its listing is in flight
        for _ in range(4):
            await lister.on_message(notice)
        await wait_for(lambda: lister.flight is None and lister.listed == 5)
        assert len(pages) == 2  # the first notice's listing, then one for the four during it
    finally:
        await runtime.aclose()


def test_the_cli_lists_cached_tools_without_a_server(tmp_path, web):
    """What the command decides runs in this process; the listing from the cache also as the real
    `hostlink` process, which must send the server nothing."""
    from mcp_config_support import environment, hostlink, hostlink_here, seed

    seed(tmp_path, json.dumps({"mcpServers": {"fx": {"url": web.url, "cacheTools": True},
                                              "plain": {"url": web.url}}}))
    env = environment(tmp_path, XDG_CACHE_HOME=str(tmp_path / "cache"))
    missing = hostlink_here(tmp_path, "mcp", "tools", "fx", "--cached", env=env)
    assert missing.returncode == 2 and "no current cached tool listing of MCP server 'fx'" in missing.stderr
    live = hostlink_here(tmp_path, "mcp", "tools", "fx", env=env)
    assert live.returncode == 0 and "echo" in live.stdout
    asked = web.count()
    cached = hostlink(tmp_path, "mcp", "tools", "fx", "--cached", env=env)
    assert cached.returncode == 0 and cached.stdout == live.stdout
    as_json = json.loads(hostlink_here(tmp_path, "mcp", "tools", "fx", "--cached", "--json", env=env).stdout)
    assert "echo" in [tool["name"] for tool in as_json] and "app_only" not in [t["name"] for t in as_json]
    plain = hostlink_here(tmp_path, "mcp", "tools", "plain", "--cached", env=env)
    assert plain.returncode == 2 and '"cacheTools": true' in plain.stderr
    assert web.count() == asked  # the cached listings asked the server nothing
    assert len(cache_files(tmp_path)) == 1


async def test_list_changed_over_streamable_http_refreshes_the_listing(tmp_path, runtime_dir, web):
    runtime = McpRuntime({"web": web.config()})
    try:
        assert "added_over_http" not in [tool.name for tool in await runtime.list_tools("web")]
        await runtime.call_tool("web", "change_tools", {"name": "added_over_http"})
        await wait_for(lambda: "added_over_http" in [tool.name for tool in runtime.snapshot("web").tools])
        result = await runtime.call_tool("web", "added_over_http", {})
        assert not result.is_error and result.content[0].text == "added_over_http was added"
    finally:
        await runtime.aclose()
