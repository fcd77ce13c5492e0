"""Start costs: `hostlink --help` and `hostlink mcp status` (with no configuration, and with
four servers configured) against a bare Python start,
`llm --help` with the hostlink plugin against `llm --help` with no plugins loaded, the import
of the LangChain and LiteLLM hosts against their framework's own (neither may load the MCP SDK
or the provider before the first request), and the first `mcp` call of a session (start the
server, set up, list tools, call `echo`) against a bare SDK client doing the same from nothing,
with the modules already imported."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import tempfile
import time
from contextlib import AsyncExitStack

import anyio

from bench.common import Row, interleaved, median, private_runtime, run_command


def run(quick: bool) -> list[Row]:
    repeats = 1 if quick else 15  # quick: each command once (the litellm import alone takes seconds)
    bin_dir = os.path.dirname(sys.executable)
    hostlink = os.path.join(bin_dir, "hostlink")
    llm = shutil.which("llm", path=bin_dir)
    bare = [sys.executable, "-c", "pass"]
    rows = []
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "HOME": home, "XDG_CONFIG_HOME": os.path.join(home, ".config"), "LLM_USER_PATH": home}
        configured = {**env, "XDG_CONFIG_HOME": _four_servers(os.path.join(home, "configured"))}
        for label, argv, environ in (
            ("hostlink --help", [hostlink, "--help"], env),
            ("hostlink mcp status", [hostlink, "mcp", "status"], env),
            ("hostlink mcp status, 4 servers configured", [hostlink, "mcp", "status"], configured),
        ):
            base, ours = interleaved(lambda: run_command(bare, env), lambda: run_command(argv, environ), repeats)
            rows.append(Row(f"{label} vs python -c pass", median(base) * 1000, median(ours) * 1000, "ms", "<= 120 ms"))
        if llm:
            without = {**env, "LLM_LOAD_PLUGINS": ""}
            base, ours = interleaved(
                lambda: run_command([llm, "--help"], without), lambda: run_command([llm, "--help"], env), repeats
            )
            rows.append(Row("llm --help with hostlink vs without plugins", median(base) * 1000, median(ours) * 1000,
                            "ms", "<= 1.05x"))
        offline = {**env, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}  # litellm fetches a price list at import otherwise
        for adapter, package, framework in _FRAMEWORKS:
            if importlib.util.find_spec(package) is None:
                continue
            base, ours = interleaved(lambda: run_command([sys.executable, "-c", framework], offline),
                                     lambda: run_command([sys.executable, "-c", f"import {adapter}"], offline),
                                     repeats)
            rows.append(Row(f"import {adapter} vs {package}'s", median(base) * 1000, median(ours) * 1000,
                            "ms", "<= 1.2x"))
    with private_runtime():
        rows.extend(anyio.run(_first_calls, quick))
    return rows


# Each host's face against what a program using that framework's models and tools imports anyway.
_FRAMEWORKS = (
    ("hostlink.adapters.langchain", "langchain_core",
     "from langchain_core.language_models import BaseChatModel; from langchain_core.tools import BaseTool"),
    ("hostlink.adapters.litellm", "litellm", "import litellm"),
)


def _four_servers(config_home: str) -> str:
    """A config home whose user file names three stdio servers and one Streamable HTTP server
    (none is started: status never connects)."""
    servers = {f"stdio{index}": {"command": "node", "args": [f"server{index}.js"]} for index in range(3)}
    servers["remote"] = {"url": "http://127.0.0.1:9/mcp"}
    os.makedirs(os.path.join(config_home, "mcp"))
    with open(os.path.join(config_home, "mcp", "mcp.json"), "w") as file:
        json.dump({"mcpServers": servers}, file)
    return config_home


async def _first_calls(quick: bool) -> list[Row]:
    """Time to the first `echo` result from a closed state; closing is not timed.

    One untimed round first (not in the smoke), so that neither side pays the parent's lazy imports."""
    from bench.bench_mcp import open_hostlink, open_sdk, servers
    from hostlink.host import CancelSignal

    rows = []
    for label, command, args, echo in servers():
        async def sdk(stack: AsyncExitStack) -> None:
            client = await open_sdk(stack, command, args)
            await client.call_tool("echo", echo)

        async def hostlink(stack: AsyncExitStack) -> None:
            tool = await open_hostlink(stack, label, command, args)
            call = {"action": "call", "server": label, "tool": "echo", "args": echo}
            result = await tool.execute(call, CancelSignal())
            if result.is_error:
                raise RuntimeError(f"first call failed: {result.content}")

        times: dict[object, list[float]] = {sdk: [], hostlink: []}
        for index in range(0 if quick else -1, 1 if quick else 7):
            for side in (sdk, hostlink) if index % 2 == 0 else (hostlink, sdk):
                async with AsyncExitStack() as stack:
                    start = time.perf_counter()
                    await side(stack)
                    if index >= 0:
                        times[side].append(time.perf_counter() - start)
        rows.append(Row(f"first mcp call (connect), {label}", median(times[sdk]) * 1000, median(times[hostlink]) * 1000,
                        "ms", "none set (~1x)"))
    return rows
