"""The CLI on a real pseudo-terminal (no tests here)."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import time
from pathlib import Path


def on_a_terminal(env: dict[str, str], cwd: Path, *argv: str,
                  answers: list[bytes] | None = None) -> tuple[int, str, bytes]:
    """Run the CLI with stderr on a pseudo-terminal and stdout a pipe: exit status, stdout, and
    every byte the terminal received. With `answers`, stdin is the terminal too and each
    answer is typed after the next prompt (output ending in ':'); otherwise stdin is empty."""
    master, slave = pty.openpty()
    stdin = slave if answers is not None else subprocess.DEVNULL
    proc = subprocess.Popen([sys.executable, "-c", "from hostlink.cli import main; main()", *argv],
                            stdout=subprocess.PIPE, stderr=slave, stdin=stdin, env=env, cwd=cwd)
    os.close(slave)
    seen, pending = bytearray(), list(answers or [])
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
            if pending and seen.rstrip(b" ").endswith(b":"):
                os.write(master, pending.pop(0))
        out = proc.stdout.read().decode()
        return proc.wait(timeout=60), out, bytes(seen)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()


def typed(env: dict[str, str], cwd: Path, answers: list[bytes], *argv: str) -> tuple[int, str, str]:
    """The CLI with stdin and stderr on a terminal, each answer typed after the next prompt."""
    code, out, seen = on_a_terminal(env, cwd, *argv, answers=answers)
    return code, out, seen.decode(errors="replace")
