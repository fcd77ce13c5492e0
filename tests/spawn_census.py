"""An opt-in pytest plugin: which processes each test started or talked to, for the count of
real-process end-to-end tests per path.

`HOSTLINK_TEST_SPAWN_LOG=/path/log.jsonl scripts/test -p spawn_census ...` appends one JSON line per
test: its id and the command lines of (a) every process the test process started while the test
ran (subprocess.Popen, which asyncio and anyio use on POSIX), and (b) every descendant of the
pytest process seen alive while the test ran (sampled from /proc), which covers module-scoped
servers the test used and, where they live long enough to be seen, the children of its children.
A test that counts its process's descriptors may see the sampler's own /proc reads: the census
is a measurement, not a run to judge the tests by.

`python tests/spawn_census.py LOG [LOG ...]` prints, for each path, how many tests of each log
started or met a real process of it (one column per log, e.g. before and after a change).
"""

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

_LOG = os.environ.get("HOSTLINK_TEST_SPAWN_LOG", "")
_SAMPLE_EVERY = 0.1  # seconds between /proc samples while a test runs
_seen: set[str] = set()
_lock = threading.Lock()
_original_init = subprocess.Popen.__init__


def _record_popen(self, args, *rest, **kwargs):
    argv = [os.fspath(args)] if isinstance(args, (str, bytes, os.PathLike)) else [os.fspath(a) for a in args]
    with _lock:
        _seen.add(" ".join(a.decode() if isinstance(a, bytes) else a for a in argv))
    _original_init(self, args, *rest, **kwargs)


def _descendants(root: int) -> list[str]:
    parent_of: dict[int, int] = {}
    cmdline: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            raw = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        parent_of[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
        cmdline[int(entry)] = raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()
    found = []
    for pid in parent_of:
        seen, walk = set(), pid
        while walk in parent_of and walk not in seen:
            seen.add(walk)
            walk = parent_of[walk]
            if walk == root:
                if cmdline[pid]:
                    found.append(cmdline[pid])
                break
    return found


class _Sampler(threading.Thread):
    def __init__(self) -> None:
        super().__init__(daemon=True, name="spawn-census")
        self.stop = threading.Event()

    def run(self) -> None:
        me = os.getpid()
        while True:
            alive = _descendants(me)
            with _lock:
                _seen.update(alive)
            if self.stop.wait(_SAMPLE_EVERY):
                return


def pytest_configure(config):
    if _LOG:
        subprocess.Popen.__init__ = _record_popen  # type: ignore[method-assign]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if not _LOG:
        yield
        return
    with _lock:
        _seen.clear()
    sampler = _Sampler()
    sampler.start()
    yield
    sampler.stop.set()
    sampler.join()
    with _lock:
        line = json.dumps({"test": item.nodeid, "argv": sorted(_seen)})
    with open(_LOG, "a", encoding="utf-8") as log:
        log.write(line + "\n")


# Each path of the count, and what a command line of its real process looks like.
PATHS = {
    "hostlink CLI (not the gateway)": re.compile(
        r"(bin/hostlink\b|-m hostlink(?![.\w])|from hostlink\.cli import main)(?!.*\b(mcp )?serve\b)"),
    "gateway (hostlink mcp serve)": re.compile(r"hostlink\b.*\bmcp serve\b"),
    "serve (hostlink serve)": re.compile(r"tests/serve_host\.py|bin/hostlink serve\b|-m hostlink serve\b"),
    "llm CLI with the plugin": re.compile(r"/bin/llm\b|tests/llm_e2e_host\.py"),
    "the real claude CLI": re.compile(r"node_modules/\.bin/claude\b|@anthropic-ai/claude-code/"),
    "real clients: a browser (chromium)": re.compile(r"chromium"),
    "real clients: the MCP conformance harness (npm)": re.compile(r"@modelcontextprotocol/conformance/"),
    "real servers (npm, PyPI)": re.compile(
        r"node_modules/(@modelcontextprotocol/server-|@playwright/mcp/)|\.venv-servers/bin/"),
    "real servers: FastMCP task server (.venv-tasks)": re.compile(r"\.venv-tasks/bin/python"),
}


def count(log: Path) -> dict[str, int]:
    """Per path, the number of tests in LOG that started or met one of its processes."""
    counts = dict.fromkeys(PATHS, 0)
    for line in log.read_text().splitlines():
        commands = json.loads(line)["argv"]
        for path, pattern in PATHS.items():
            counts[path] += any(pattern.search(command) for command in commands)
    return counts


if __name__ == "__main__":
    columns = [count(Path(name)) for name in sys.argv[1:]]
    width = max(map(len, PATHS))
    print(" " * width + "".join(f"  {Path(name).stem:>16}" for name in sys.argv[1:]))
    for path in PATHS:
        print(path.ljust(width) + "".join(f"  {column[path]:>16}" for column in columns))
