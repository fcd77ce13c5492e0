"""The platform seam on this system (POSIX): process trees, the lock, pipes, limits, folders."""

from __future__ import annotations

import os
import resource
import signal
import sys
from pathlib import Path

import anyio
import pytest

from hostlink.host.platform import console, folders, limits, locks, pipes, processes, shell

pytestmark = pytest.mark.anyio


async def test_a_child_and_what_it_started_end_with_its_tree():
    # The child starts a grandchild and reports its pid; the stop ends both.
    script = ("import subprocess, sys, time; "
              "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
              "print(p.pid, flush=True); time.sleep(60)")
    process, tree = await processes.start_child([sys.executable, "-c", script], env=os.environ, cwd=None, stderr=None)
    try:
        assert process.stdout is not None
        grandchild = int((await process.stdout.receive()).split()[0])
        assert tree.alive() and processes.process_alive(grandchild)
        assert tree.stop(forced=False) is True
        with anyio.fail_after(10):
            await process.wait()
            while tree.alive():
                await anyio.sleep(0.02)
        assert process.returncode in processes.STOPPED_STATUSES
    finally:
        tree.stop(forced=True)
        tree.close()
        await process.aclose()
    assert not tree.alive()
    assert _zombie(grandchild) or not processes.process_alive(grandchild)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True  # gone


def test_the_lock_is_exclusive_and_released(tmp_path):
    first = os.open(tmp_path / "a.lock", os.O_RDWR | os.O_CREAT, 0o600)
    second = os.open(tmp_path / "a.lock", os.O_RDWR)
    try:
        assert locks.try_lock(first) is True
        assert locks.try_lock(second) is False
        locks.unlock(first)
        assert locks.try_lock(second) is True
    finally:
        os.close(first)
        os.close(second)


async def test_a_pipe_is_read_until_its_end():
    read_fd, write_fd = pipes.make_pipe()
    try:
        os.write(write_fd, b"tail")
        assert await pipes.read_pipe(read_fd, 100) == b"tail"
        os.close(write_fd)
        assert await pipes.read_pipe(read_fd, 100) == b""
    finally:
        os.close(read_fd)


def test_the_descriptor_limit_is_the_soft_rlimit():
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    assert limits.descriptor_limit() == (None if soft == resource.RLIM_INFINITY else soft)


def test_posix_folders_and_lines_are_as_before():
    environ = {"HOME": "/home/u", "XDG_CONFIG_HOME": "relative", "XDG_CACHE_HOME": "/c"}
    assert folders.config_home(environ) == Path("/home/u/.config")  # a relative XDG value is ignored
    assert folders.cache_home(environ) == Path("/c")
    assert folders.state_home(environ) == Path("/home/u/.local/state")
    assert shell.set_variable_line("A", shell.literal("http://127.0.0.1:1")) == "export A=http://127.0.0.1:1"
    assert shell.set_variable_line("B", shell.file_contents("/k")) == 'export B="$(cat /k)"'
    assert console.TERMINATING_SIGNALS == (signal.SIGTERM, signal.SIGHUP)
    assert console.exit_status(signal.SIGTERM) == 143 and console.stop_name(signal.SIGHUP) == "SIGHUP"


async def test_a_captured_signal_calls_stop_and_is_released_after():
    import asyncio

    heard: list[int] = []
    with console.capture(asyncio.get_running_loop(), (signal.SIGHUP,), heard.append):
        os.kill(os.getpid(), signal.SIGHUP)
        with anyio.fail_after(5):
            while not heard:
                await anyio.sleep(0.01)
    assert heard == [signal.SIGHUP]
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_DFL
