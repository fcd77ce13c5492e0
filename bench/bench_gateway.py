"""`hostlink mcp serve`: what an MCP host loads into its context, and what a call costs.

Context: the bytes of the `tools/list` answers an MCP host receives with three servers
configured (the demo server, `server-everything` when installed, a 100-tool server):
straight from each server, summed, against the one answer of the gateway's proxy face (and,
for reference, its tools face). Call: the p50 of an `echo` call of the demo server made by
an SDK client straight to it, against the same call through the gateway (two hops), each
on its own open session, interleaved in one event loop; and, to tell the gateway's own cost
from what any second hop costs, the same call through a pass-through proxy written with
nothing but the SDK (`bench/sdk_proxy.py`): against straight (the floor of two hops) and
against the gateway.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio

from bench.bench_mcp import EVERYTHING, interleaved_async
from bench.common import Row, median

ROOT = Path(__file__).resolve().parent.parent
HOSTLINK = str(Path(sys.executable).parent / "hostlink")


def _servers() -> dict[str, dict[str, Any]]:
    found = {"demo": {"command": sys.executable, "args": ["-m", "hostlink.demo"]},
             "hundred": {"command": sys.executable, "args": [str(ROOT / "bench" / "hundred_tools.py")]}}
    if EVERYTHING.exists():
        found["everything"] = {"command": str(EVERYTHING), "args": ["stdio"]}
    return found


async def _client(stack: AsyncExitStack, command: str, args: list[str], env: dict[str, str] | None = None) -> Any:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    errlog = stack.enter_context(open(os.devnull, "w"))  # noqa: ASYNC230, SIM115 - /dev/null: instant; the stack closes it
    params = StdioServerParameters(command=command, args=args, env=env)
    return await stack.enter_async_context(Client(stdio_client(params, errlog=errlog), mode="legacy"))


async def _open_all(stack: AsyncExitStack, specs: list[tuple[Any, ...]]) -> list[Any]:
    """SDK clients of every `(command, args[, env])` in `specs`, started at once (each
    start imports an SDK), open until `stack` closes."""
    clients: list[Any] = [None] * len(specs)
    ready = [anyio.Event() for _ in specs]
    done = anyio.Event()

    async def hold(index: int, spec: tuple[Any, ...]) -> None:
        async with AsyncExitStack() as own:
            clients[index] = await _client(own, *spec)
            ready[index].set()
            await done.wait()

    group = await stack.enter_async_context(anyio.create_task_group())
    stack.callback(done.set)  # runs first on the way out: every client closes, then the group ends
    for index, spec in enumerate(specs):
        group.start_soon(hold, index, spec)
    for event in ready:
        await event.wait()
    return clients


async def _listing_bytes(client: Any) -> int:
    listed = await client.list_tools()
    return len(json.dumps(listed.model_dump(by_alias=True, exclude_none=True, mode="json")["tools"]))


def _gateway_env(home: str, servers: dict[str, Any]) -> dict[str, str]:
    config = Path(home) / "config" / "mcp"
    config.mkdir(parents=True, exist_ok=True)
    (config / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    return {**os.environ, "XDG_CONFIG_HOME": str(Path(home) / "config"), "HOME": home,
            "HOSTLINK_RUNTIME_DIR": str(Path(home) / "runtime")}


async def _measure(quick: bool) -> list[Row]:
    repeats, warmup = (3, 1) if quick else (200, 20)
    servers = _servers()
    rows = []
    with tempfile.TemporaryDirectory() as home:
        env = _gateway_env(home, servers)
        async with AsyncExitStack() as stack:
            specs = [(server["command"], server["args"]) for server in servers.values()]
            demo_spec = [sys.executable, *servers["demo"]["args"]]
            *direct_clients, proxy, tools, bare = await _open_all(stack, [
                *specs, (HOSTLINK, ["mcp", "serve"], env), (HOSTLINK, ["mcp", "serve", "--expose", "tools"], env),
                (sys.executable, [str(ROOT / "bench" / "sdk_proxy.py"), *demo_spec])])
            straight = sum([await _listing_bytes(client) for client in direct_clients])
            label = f"{len(servers)} servers"
            rows.append(Row(f"tools/list bytes, {label}: proxy face vs straight", straight,
                            await _listing_bytes(proxy), "B", "<= 0.05x"))
            rows.append(Row(f"tools/list bytes, {label}: tools face vs straight", straight,
                            await _listing_bytes(tools), "B", "~1x (for reference)"))

            demo = direct_clients[0]  # the demo server, straight

            async def direct() -> None:
                if (await demo.call_tool("echo", {"text": "hello"})).is_error:
                    raise RuntimeError("benchmark call failed (straight)")

            async def via_tools() -> None:
                if (await tools.call_tool("demo__echo", {"text": "hello"})).is_error:
                    raise RuntimeError("benchmark call failed (tools face)")

            async def via_proxy() -> None:
                request = {"action": "call", "server": "demo", "tool": "echo", "args": {"text": "hello"}}
                if (await proxy.call_tool("mcp", request)).is_error:
                    raise RuntimeError("benchmark call failed (proxy face)")

            async def via_sdk_proxy() -> None:
                if (await bare.call_tool("echo", {"text": "hello"})).is_error:
                    raise RuntimeError("benchmark call failed (SDK proxy)")

            for name, baseline, through, goal in (
                    ("demo echo (tools face) vs straight", direct, via_tools, "<= 1.3x"),
                    ("demo echo (proxy face) vs straight", direct, via_proxy, "<= 1.3x"),
                    ("demo echo, SDK pass-through proxy vs straight", direct, via_sdk_proxy,
                     "the floor of two hops (reference)"),
                    ("demo echo (tools face) vs SDK pass-through proxy", via_sdk_proxy, via_tools, "~1x")):
                await interleaved_async(baseline, through, warmup)
                base, ours = await interleaved_async(baseline, through, repeats)
                rows.append(Row(f"gateway call p50, {name}", median(base) * 1000, median(ours) * 1000, "ms", goal))
    return rows


def run(quick: bool) -> list[Row]:
    return anyio.run(_measure, quick)
