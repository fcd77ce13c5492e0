"""End to end through llm: one tool round trip, `llm -m claude-code/sonnet -T mcp`, against
the two bare `claude -p` runs the same round trip needs at least, and against the sum of
all its unavoidable parts: llm's own start (`llm --version`, no plugins), the two bare
runs, and the MCP server's own first connect (a bare SDK client, its modules already
imported: the SDK import is what hostlink hides behind the first provider request).

The fake Anthropic API answers the first request with a call of the `mcp` tool (`echo`
on `server-everything`) and the second with text; the bare runs get text answers. The
`claude-code` provider takes a local API only from code, never from the environment, so
llm's own CLI runs in a small wrapper process that hands llm the two extensions configured
for the fake (`hostlink.adapters.llm.use_extensions`) before calling `llm.cli`. Both
sides use a throwaway HOME, the same allowlisted environment for `claude` and a cwd
outside the repository; the wrapper's exit stops the MCP server and every `claude`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from contextlib import AsyncExitStack
from pathlib import Path

import anyio

from bench.bench_mcp import EVERYTHING, open_sdk
from bench.bench_provider import CLAUDE, _fake_anthropic
from bench.common import Row, median, run_command, timed

MODEL = "sonnet"
CALL = {"action": "call", "server": "everything", "tool": "echo", "args": {"message": "hello"}}

_WRAPPER = r"""
import sys
from hostlink.adapters import llm as adapter
from hostlink.claude_code.extension import ClaudeCodeExtension
from hostlink.claude_code.process import ClaudeTransportOptions
from hostlink.mcp.extension import McpExtension
from hostlink.mcp.config.schema import StdioServer

base_url, server, home, path = sys.argv[1:5]
adapter.use_extensions([
    McpExtension(servers={"everything": StdioServer(command=server, args=["stdio"])}),
    ClaudeCodeExtension(options=ClaudeTransportOptions(test_api_base_url=base_url, test_api_key="sk-ant-bench"),
                        environ={"HOME": home, "PATH": path}),
])
from llm.cli import cli
cli(sys.argv[5:])
"""


def _run_interruptibly(argv: list[str], env: dict[str, str], cwd: str) -> tuple[int, str, str]:
    """Run the wrapper; past the time limit interrupt it (SIGINT: the plugin stops its MCP
    server and `claude` children on the way out) and kill it only if that fails."""
    process = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        stdout, stderr = process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGINT)
        try:
            process.communicate(timeout=30)
        finally:
            process.kill()
            process.wait()
        raise RuntimeError("the llm round trip did not finish within 120 s") from None
    return process.returncode, stdout, stderr


def available() -> bool:
    return CLAUDE.exists() and EVERYTHING.exists()


def run(quick: bool) -> list[Row]:
    if not available():
        return []
    from hostlink.claude_code.catalog import qualified_name
    from hostlink.claude_code.process import ClaudeTransportOptions, child_environment

    fake_anthropic = _fake_anthropic()
    with (tempfile.TemporaryDirectory() as home,
          fake_anthropic.FakeAnthropic(fake_anthropic.text("bare answer")) as fake):
        runtime = os.path.join(home, "runtime")
        path = f"{CLAUDE.parent}{os.pathsep}{os.environ['PATH']}"
        options = ClaudeTransportOptions(test_api_base_url=fake.base_url, test_api_key="sk-ant-bench")
        # the CLI litters TMPDIR
        bare_env = child_environment({"HOME": home, "PATH": path}, options, temp_dir=Path(home))
        bare_argv = [str(CLAUDE), "-p", "--output-format", "stream-json", "--verbose", "--model", MODEL, "hello"]
        llm_env = {**os.environ, "HOME": home, "LLM_USER_PATH": home, "HOSTLINK_RUNTIME_DIR": runtime}
        llm_argv = [sys.executable, "-c", _WRAPPER, fake.base_url, str(EVERYTHING), home, path,
                    "prompt", "-m", f"claude-code/{MODEL}", "-T", "mcp", "--no-log", "echo hello"]

        def two_bare_runs() -> None:
            for _ in range(2):
                subprocess.run(bare_argv, env=bare_env, cwd=home, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, check=True, timeout=120)

        def round_trip() -> None:
            fake.push(fake_anthropic.tool_use(qualified_name("mcp"), CALL), fake_anthropic.text("The echo said hello."))
            returncode, stdout, stderr = _run_interruptibly(llm_argv, llm_env, home)
            if returncode != 0 or "The echo said hello." not in stdout:
                raise RuntimeError(f"llm round trip failed ({returncode}): {stderr[-2000:]}")
            if "Echo: hello" not in json.dumps(fake.messages_requests()[-1]):
                raise RuntimeError("the second request did not carry the echo tool's result")

        llm_start = [sys.executable, "-c", "from llm.cli import cli; cli(['--version'])"]
        llm_start_env = {**llm_env, "LLM_LOAD_PLUGINS": ""}

        async def server_connect() -> None:
            async with AsyncExitStack() as stack:
                client = await open_sdk(stack, str(EVERYTHING), ["stdio"])
                await client.call_tool("echo", CALL["args"])

        parts = {"llm start": lambda: run_command(llm_start, llm_start_env), "2 bare claude -p": two_bare_runs,
                 "server connect": lambda: anyio.run(server_connect), "round trip": round_trip}
        if not quick:  # the CLI's first run in a fresh HOME writes its config
            for part in parts.values():
                part()
        times: dict[str, list[float]] = {name: [] for name in parts}
        for index in range(1 if quick else 7):
            for name in list(parts) if index % 2 == 0 else list(reversed(parts)):
                times[name].append(timed(parts[name]))
    unavoidable = [sum(times[name][index] for name in ("llm start", "2 bare claude -p", "server connect"))
                   for index in range(len(times["round trip"]))]
    round_trip_ms = median(times["round trip"]) * 1000
    return [
        Row("llm -T mcp tool round trip vs 2 bare claude -p", median(times["2 bare claude -p"]) * 1000, round_trip_ms,
            "ms", "none set (~1x)"),
        Row("llm -T mcp tool round trip vs its unavoidable parts (llm start + 2 claude -p + server connect)",
            median(unavoidable) * 1000, round_trip_ms, "ms", "<= 1.0x"),
    ]
