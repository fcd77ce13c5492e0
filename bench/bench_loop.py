"""An agent's tool loop on each host against bare `claude -p` runs, in one run.

The loop: the model proposes a tool call ten times, the host runs the tool (a sleep of
`TOOL_SECONDS`, or none), and the eleventh request gets the answer. The baseline is what an
agent gets by running a bare `claude -p` per request: eleven runs with the same tool time
between them. The hosts: a pydantic-ai `Agent` on `ClaudeCodeModel`, an `llm` chain on the
llm host (in-process, as llm's Python API runs it), a client through `hostlink serve`
(Chat Completions, the whole conversation in each request), a LangChain `ChatClaudeCode` with
bound tools (`invoke`, as a LangGraph agent sends each round) and `litellm.completion` on
`claude-code/<model>`. Each row is the median loop time of each side, interleaved (with
`--quick`, one bare run is every row's baseline). The floor, measured on Claude Code 2.1.332: a
prewarmed child that is up when its request comes answers in ~0.1 s, and the seed stops it and
checks the stop before publishing the proposal (~0.06 s, the CLI's own SIGTERM shutdown), about
0.57x with 0.3 s tools. With no tool time each round waits for its child's start (~0.45 s, all
of it CPU), about 0.8x.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import tempfile
import time
from pathlib import Path

from bench.bench_provider import CLAUDE, MODEL, _fake_anthropic
from bench.bench_serve import _Server
from bench.bench_serve_clients import TOOL, _endpoint_loop, _script
from bench.common import Row, interleaved, median, private_runtime, timed

TOOL_SECONDS = 0.3
PROMPT = "Weather in ten cities?"


def _bare(home: str, environ: dict[str, str], options: object, rounds: int, tool_seconds: float):
    from hostlink.claude_code.process import child_environment

    argv = [str(CLAUDE), "-p", "--output-format", "stream-json", "--verbose", "--model", MODEL, "hello"]
    env = child_environment(environ, options, temp_dir=Path(home))  # type: ignore[arg-type]

    def loop() -> None:
        for index in range(rounds + 1):
            if index:
                time.sleep(tool_seconds)
            subprocess.run(argv, env=env, cwd=home, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=True, timeout=120)

    return loop


def _pydantic_ai(home: str, environ: dict[str, str], options: object, fake_anthropic, fake, rounds: int,
                 tool_seconds: float):
    from pydantic_ai import Agent

    from hostlink.adapters.pydantic_ai import ClaudeCodeModel

    def loop() -> None:
        agent = Agent(ClaudeCodeModel(MODEL, cwd=home, options=options, environ=environ))  # type: ignore[arg-type]

        @agent.tool_plain
        async def get_weather(city: str) -> str:
            """The weather in a city."""
            await asyncio.sleep(tool_seconds)
            return f"sunny in {city}"

        _script(fake_anthropic, fake, rounds)
        if asyncio.run(agent.run(PROMPT)).output != "All sunny.":
            raise RuntimeError("the pydantic-ai loop did not end with the answer")

    return loop


def _llm(home: str, environ: dict[str, str], options: object, fake_anthropic, fake, rounds: int,
         tool_seconds: float):
    import llm

    from hostlink.adapters.llm.llm_host import LlmHost
    from hostlink.claude_code import ClaudeCodeExtension

    def get_weather(city: str) -> str:
        """The weather in a city."""
        time.sleep(tool_seconds)
        return f"sunny in {city}"

    def loop() -> None:
        host = LlmHost([ClaudeCodeExtension(options=options, environ=environ)])  # type: ignore[arg-type]
        try:
            model = next(model for model in host.models() if model.model_id == f"claude-code/{MODEL}")
            _script(fake_anthropic, fake, rounds)
            if model.chain(PROMPT, tools=[llm.Tool.function(get_weather)]).text().strip() != "All sunny.":
                raise RuntimeError("the llm chain did not end with the answer")
        finally:
            host.close()

    return loop


def _langchain(home: str, environ: dict[str, str], options: object, fake_anthropic, fake, rounds: int,
               tool_seconds: float):
    from langchain_core.messages import HumanMessage, ToolMessage

    from hostlink.adapters.langchain import ChatClaudeCode

    def loop() -> None:
        chat = ChatClaudeCode(model=MODEL, cwd=Path(home), environ=environ, options=options)
        try:
            bound = chat.bind_tools([{"type": "function", "function": TOOL}])
            _script(fake_anthropic, fake, rounds)
            messages: list = [HumanMessage(PROMPT)]
            while (reply := bound.invoke(messages)).tool_calls:
                time.sleep(tool_seconds)
                messages += [reply, *(ToolMessage(f"sunny in {call['args']['city']}", tool_call_id=call["id"])
                                      for call in reply.tool_calls)]
            if reply.content != "All sunny.":
                raise RuntimeError("the LangChain loop did not end with the answer")
        finally:
            chat.close()

    return loop


def _litellm(home: str, environ: dict[str, str], options: object, fake_anthropic, fake, rounds: int,
             tool_seconds: float):
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm fetches a price list at import otherwise
    import litellm

    from hostlink.adapters.litellm import register

    def loop() -> None:
        handler = register(home, options=options, environ=environ)  # type: ignore[arg-type]
        try:
            _script(fake_anthropic, fake, rounds)
            messages: list = [{"role": "user", "content": PROMPT}]
            while True:
                message = litellm.completion(model=f"claude-code/{MODEL}", messages=messages,
                                             tools=[{"type": "function", "function": TOOL}]).choices[0].message
                if not message.tool_calls:
                    break
                time.sleep(tool_seconds)
                messages += [message.model_dump(), *({"role": "tool", "tool_call_id": call.id, "content": "sunny"}
                                                     for call in message.tool_calls)]
            if message.content != "All sunny.":
                raise RuntimeError("the LiteLLM loop did not end with the answer")
        finally:
            handler.close()

    return loop


def run(quick: bool) -> list[Row]:
    if not CLAUDE.exists():
        return []
    from hostlink.claude_code import ClaudeTransportOptions

    fake_anthropic = _fake_anthropic()
    rounds = 1 if quick else 10
    repeats = 1 if quick else 3
    rows = []
    with private_runtime() as runtime, tempfile.TemporaryDirectory() as home, \
            fake_anthropic.FakeAnthropic(fake_anthropic.text("hi there")) as fake:
        options = ClaudeTransportOptions(test_api_base_url=fake.base_url, test_api_key="sk-ant-bench")
        environ = {"HOME": home, "PATH": f"{CLAUDE.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        server = _Server(fake.base_url, home, runtime)
        try:
            for tool_seconds in (TOOL_SECONDS,) if quick else (TOOL_SECONDS, 0.0):
                bare = _bare(home, environ, options, rounds, tool_seconds)
                hosts = {
                    "pydantic-ai agent": _pydantic_ai(home, environ, options, fake_anthropic, fake, rounds,
                                                      tool_seconds),
                    "llm chain": _llm(home, environ, options, fake_anthropic, fake, rounds, tool_seconds),
                    "serve client": _endpoint_loop(server, fake_anthropic, fake, rounds, tool_seconds),
                    "LangChain model": _langchain(home, environ, options, fake_anthropic, fake, rounds, tool_seconds),
                    "LiteLLM completion": _litellm(home, environ, options, fake_anthropic, fake, rounds, tool_seconds),
                }
                if not quick and tool_seconds:  # the CLI's first run in a fresh HOME writes its config
                    bare()
                if quick:  # the smoke: one bare run is every row's baseline
                    shared = timed(bare)
                for name, loop in hosts.items():
                    if quick:
                        base, ours = [shared], [timed(loop)]
                    else:
                        base, ours = interleaved(bare, loop, repeats)
                    tool = f"{tool_seconds:g} s tools" if tool_seconds else "no tool time"
                    goal = "<= 0.5x" if tool_seconds else ("<= 0.6x" if name != "llm chain" else "none set")
                    rows.append(Row(f"{rounds}-round tool loop, {tool}: {name} vs {rounds + 1} bare claude -p",
                                    median(base), median(ours), "s", goal))
        finally:
            server.close()
    return rows
