"""Running `hostlink mcp …` as a person does: a config file in a temporary HOME, the command in a
fresh interpreter (the CLI tests of issue 15: output, progress, errors, elicitation), or, for a
test about what the command decides rather than about its process, the same command in this one."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcp_runtime_support import live_children


def configure(tmp_path: Path, servers: dict) -> dict[str, str]:
    config_home = tmp_path / "config"
    (config_home / "mcp").mkdir(parents=True, exist_ok=True)
    (config_home / "mcp" / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    environ = {key: value for key, value in os.environ.items()
               if key not in ("HOSTLINK_TRUST_PROJECT", "GITHUB_TOKEN")}
    environ.update(XDG_CONFIG_HOME=str(config_home), HOME=str(tmp_path), HOSTLINK_RUNTIME_DIR=str(tmp_path / "rt"))
    return environ


def hostlink(env: dict[str, str], tmp_path: Path, *argv: str, stdin: str | None = None):
    result = subprocess.run([sys.executable, "-c", "from hostlink.cli import main; main()", *argv],
                            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, input=stdin)
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    return result


def hostlink_here(env: dict[str, str], tmp_path: Path, *argv: str, stdin: str | None = None):
    """`hostlink(...)` without the interpreter start: the same click command, argv, environment,
    working directory and stdin (never a terminal) in this process. For what the command decides
    (its output, its exit status, the files it writes); a test about the process itself (the entry
    point, signals, a terminal, what reaches the real stderr) keeps `hostlink(...)`."""
    return run_here(env, tmp_path, argv, stdin)


def run_here(env: dict[str, str], cwd: Path, argv: tuple[str, ...], stdin: str | None) -> subprocess.CompletedProcess:
    """The in-process run behind `hostlink_here` (and mcp_config_support's). What reaches file
    descriptors 1 and 2 during the run (a server that inherited them) is added to stdout and
    stderr, as it would be in the child's. It fails on a traceback as the subprocess helpers do,
    and on a child process or thread the command left running, which in a real run would have
    outlived its process."""
    from hostlink.cli import cli  # the command the helpers' children run, through main()

    children, threads = set(live_children()), set(threading.enumerate())
    with _as_the_child(env, cwd), _descriptors() as written:
        result = CliRunner().invoke(cli, list(argv), input=stdin, prog_name="hostlink")
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    if isinstance(result.exception, SystemExit):  # a text instead would go to stdout here, to stderr in a process
        assert result.exception.code is None or isinstance(result.exception.code, int), result.exception.code
    stdout, stderr = result.stdout + written[1].decode(), result.stderr + written[2].decode()
    assert "Traceback" not in stdout + stderr, stderr
    _left_behind(children, threads)
    return subprocess.CompletedProcess(list(argv), result.exit_code, stdout, stderr)


@contextmanager
def _descriptors() -> Iterator[dict[int, bytes]]:
    """Descriptors 1 and 2 on temporary files while the block runs; then what was written to each."""
    written: dict[int, bytes] = {}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        saved = {fd: os.dup(fd) for fd in (1, 2)}
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        try:
            yield written
        finally:
            for fd, copy in saved.items():
                os.dup2(copy, fd)
                os.close(copy)
            for fd, file in ((1, out), (2, err)):
                file.seek(0)
                written[fd] = file.read()


@contextmanager
def _as_the_child(env: dict[str, str], cwd: Path) -> Iterator[None]:
    """os.environ exactly `env` and the working directory `cwd`, as the child would have them; restored after."""
    saved, here = dict(os.environ), os.getcwd()
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(here)
        os.environ.clear()
        os.environ.update(saved)


def _left_behind(children: set[int], threads: set[threading.Thread], grace: float = 5.0) -> None:
    """Fail if the command left a child process or a thread running (after `grace` seconds for
    one that is already on its way out)."""
    deadline = time.monotonic() + grace
    while True:
        alive = set(live_children()) - children
        running = [t for t in threading.enumerate() if t not in threads and t.is_alive()]
        if not alive and not running:
            return
        if time.monotonic() > deadline:
            pytest.fail(f"the command left running: processes {sorted(alive)}, threads {[t.name for t in running]}")
        time.sleep(0.05)


EVERYTHING = Path(__file__).parents[1] / "node_modules/@modelcontextprotocol/server-everything/dist/index.js"
NODE = shutil.which("node")
needs_everything = pytest.mark.skipif(not (EVERYTHING.is_file() and NODE) and not os.environ.get("CI"),
                                      reason="npm peer @modelcontextprotocol/server-everything or node is missing")
EVERY = {"command": NODE or "node", "args": [str(EVERYTHING), "stdio"]}

