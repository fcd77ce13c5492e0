"""`hostlink serve` against the provider it puts on the wire, in one run.

- One request: `POST /v1/messages` (non-streaming, one text answer) to a running
  `hostlink serve` against the same provider request made in-process on a host session,
  both with the real CLI against the same local fake Anthropic API, interleaved; p50 of each.
- Four requests at once against the same four one after another, as requests per second.
  The fake API holds each answer for `MODEL_SECONDS` first, as a model takes time to
  answer, so the row shows whether requests wait for each other. Four `claude` starts at
  once also compete for the CPU (a 2-core machine runs two at a time), which no server can
  hide: a third row makes the same four requests at once in-process, the floor the server's
  concurrency is compared with.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import anyio

from bench.bench_provider import CLAUDE, MODEL, ROOT, _fake_anthropic
from bench.common import Row, interleaved, median, private_runtime

SERVE_HOST = ROOT / "tests" / "serve_host.py"  # hostlink serve with the code-only fake-API option
KEY = "bench-serve-key-0123456789"
MODEL_SECONDS = 1.0
BODY = json.dumps({"model": MODEL, "max_tokens": 64, "messages": [{"role": "user", "content": "hello"}]})


class _Server:
    """A `hostlink serve` process on an ephemeral port; stopped (SIGTERM) on exit."""

    def __init__(self, api_url: str, home: str, runtime: str) -> None:
        env = {key: value for key, value in os.environ.items() if not key.startswith(("ANTHROPIC_", "OPENAI_"))}
        env.update(PATH=f"{CLAUDE.parent}{os.pathsep}{env.get('PATH', '')}", HOME=home,
                   HOSTLINK_RUNTIME_DIR=runtime, BENCH_SERVE_KEY=KEY)
        self.process = subprocess.Popen([sys.executable, str(SERVE_HOST), api_url, "--token-env", "BENCH_SERVE_KEY"],
                                        cwd=home, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, text=True)
        banner = self.process.stdout.readline() if self.process.stdout else ""
        if "listening on " not in banner:
            self.close()
            raise RuntimeError("hostlink serve did not start")
        self.port = int(banner.split("listening on ")[1].split(" ")[0].rsplit(":", 1)[1])

    def ask(self) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            connection.request("POST", "/v1/messages", BODY, {"x-api-key": KEY, "content-type": "application/json"})
            response = connection.getresponse()
            answer = response.read()
        finally:
            connection.close()
        if response.status != 200:
            raise RuntimeError(f"hostlink serve answered {response.status}: {answer[:200]!r}")

    def close(self) -> None:
        self.process.terminate()
        self.process.communicate(timeout=60)


def _in_process(options: object, home: str):
    """One provider request on a host session, as serve makes it."""
    from hostlink.claude_code.extension import ClaudeCodeExtension
    from hostlink.claude_code.models import MODELS
    from hostlink.host import CancelSignal, Context, Done, TextContent, UserMessage
    from hostlink.host.session import HostSession

    spec = next(spec for spec in MODELS if spec.id == MODEL)
    context = Context("", [UserMessage([TextContent("hello")])])
    environ = {"HOME": home, "PATH": f"{CLAUDE.parent}{os.pathsep}{os.environ.get('PATH', '')}"}

    async def request() -> None:
        host = HostSession([ClaudeCodeExtension(options=options, environ=environ)])  # type: ignore[arg-type]
        await host.start(cwd=Path(home), project_trusted=False, notifier=_Quiet())
        try:
            events = [event async for event in host.stream("claude-code", spec, context, CancelSignal())]
        finally:
            await host.shutdown()
        if not isinstance(events[-1], Done):
            raise RuntimeError(f"provider request failed: {events[-1]}")

    return lambda: anyio.run(request)


class _Quiet:
    def notify(self, message: str, level: str = "info") -> None:
        pass


def _at_once(work, count: int) -> float:
    """Seconds for `count` runs of `work` started together."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as error:  # noqa: BLE001 - reported below, in the main thread
            errors.append(error)

    threads = [threading.Thread(target=run) for _ in range(count)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return time.perf_counter() - started


def run(quick: bool) -> list[Row]:
    if not CLAUDE.exists():
        return []
    from hostlink.claude_code.process import ClaudeTransportOptions

    fake_anthropic = _fake_anthropic()
    with private_runtime() as runtime, tempfile.TemporaryDirectory() as home, \
            fake_anthropic.FakeAnthropic(fake_anthropic.text("hi there")) as fake:
        options = ClaudeTransportOptions(test_api_base_url=fake.base_url, test_api_key="sk-ant-bench")
        in_process = _in_process(options, home)
        server = _Server(fake.base_url, home, runtime)
        try:
            if not quick:  # the CLI's first run in a fresh HOME writes its config
                interleaved(in_process, server.ask, 1)
            base, ours = interleaved(in_process, server.ask, 1 if quick else 9)
            delay = 0.0 if quick else MODEL_SECONDS
            fake.default = fake_anthropic.text("hi there", delay_before_delta=delay)
            count = 2 if quick else 4
            one_by_one = sum(_at_once(server.ask, 1) for _ in range(count))
            together = _at_once(server.ask, count)
            floor = _at_once(in_process, count)
        finally:
            server.close()
    return [
        Row("serve request p50 vs in-process provider request", median(base) * 1000, median(ours) * 1000, "ms",
            "<= +15 ms"),
        Row(f"serve {count} concurrent vs one at a time (req/s, {delay:g} s model time)",
            count / one_by_one, count / together, "req/s", ">= 3x"),
        Row(f"serve {count} concurrent vs {count} concurrent in-process (req/s)", count / floor, count / together,
            "req/s", "~1x (no serializing)"),
    ]
