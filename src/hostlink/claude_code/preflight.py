"""What the installed `claude` is, asked once per executable: `--version` and `--help`.

Every child (a request's, a prewarmed one, a web search's) starts only after its argv was
checked against these facts (`checked_argv`): a flag the CLI lacks is dropped where
`FLAGS` says that is safe, and otherwise the
start is refused with a message naming the flag, the version and the fix, instead of a
child that dies on `error: unknown option`.

Asking costs two short CLI runs (0.2–1.4 s on the real CLI), too much for every request of
a one-shot host, so the facts are kept in a private 0600 file of the user's cache directory
(`$XDG_CACHE_HOME/hostlink`), keyed by the executable's resolved path and file identity
(a `claude update` changes it) and trusted for at most `CACHE_SECONDS`. Each run is time-bounded, with the
request's allowlisted environment, in a private directory that is also its TMPDIR.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio

from hostlink.claude_code import compatibility
from hostlink.claude_code.process import ClaudeProcess, ProcessError, build_argv
from hostlink.host.platform.folders import cache_home
from hostlink.host.private import (
    PrivateStateError,
    create_private_dir,
    ensure_private_dir,
    read_private_json,
    remove_private_dir,
    replace_private_file,
)

CACHE_FILE = "claude-cli-facts.json"
CACHE_SECONDS = 3600.0
MAX_CACHE_ENTRIES = 8
MAX_CACHE_BYTES = 64 * 1024
CLI_TIMEOUT_SECONDS = 15.0
MAX_OUTPUT_BYTES = 64 * 1024


class StepFailed(Exception):
    """A short CLI run failed; `code` is a content-free identifier for reports."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


class CliUnsupported(Exception):
    """This `claude` cannot serve a request as hostlink builds it; the message says why,
    `code` is the provider error code."""

    def __init__(self, message: str, code: str = "cli_unsupported") -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class CliFacts:
    version: tuple[int, int, int] | None
    listed: frozenset[str]  # the options ``claude --help`` lists

    @property
    def shown_version(self) -> str | None:
        return compatibility.show(self.version) if self.version is not None else None


async def run_command(executable: str, args: list[str], env: Mapping[str, str]) -> tuple[int, bytes]:
    """`executable args…` in a fresh private directory (its cwd and TMPDIR); bounded."""
    directory = create_private_dir("claude-probe")
    try:
        env = {**env, "TMPDIR": str(directory)}  # the CLI leaves directories in its TMPDIR
        return await run_argv([executable, *args], env, directory, b"", CLI_TIMEOUT_SECONDS)
    finally:
        remove_private_dir(directory)


async def run_argv(
    argv: list[str], env: Mapping[str, str], directory: Path, stdin: bytes, timeout: float
) -> tuple[int, bytes]:
    """Run one short command in its own process group; bounded time and output."""
    try:
        process = await ClaudeProcess.start(argv, env, directory, directory / "stderr.log")
    except ProcessError:
        raise StepFailed("could not be started", "start_failed") from None
    output = bytearray()
    try:
        with anyio.move_on_after(timeout) as scope:
            if stdin:
                await process.send_line(stdin.rstrip(b"\n"))
            await process.close_stdin()
            while (line := await process.receive_line()) is not None:
                output += line + b"\n"
                if len(output) > MAX_OUTPUT_BYTES:
                    raise StepFailed("wrote too much output", "too_much_output")
            status = await process.wait()
        if scope.cancelled_caught:
            raise StepFailed(f"did not finish within {int(timeout)} seconds", "timeout")
        return status, bytes(output)
    except ProcessError:
        raise StepFailed("failed while running", "run_failed") from None
    finally:
        try:
            await process.terminate()
        except ProcessError:
            raise StepFailed("could not be stopped", "stop_failed") from None


async def probe(executable: str, env: Mapping[str, str]) -> CliFacts:
    """Ask the CLI now and remember the answer; raises StepFailed.

    One after the other: `--version` takes about 10 ms (the CLI answers it before loading).
    """
    status, output = await run_command(executable, ["--version"], env)
    version = compatibility.parse_version(output.decode("utf-8", "replace")) if status == 0 else None
    status, output = await run_command(executable, ["--help"], env)
    listed = compatibility.listed_flags(output.decode("utf-8", "replace")) if status == 0 else frozenset()
    facts = CliFacts(version, listed)
    if version is not None:  # a CLI that could not say its version is asked again next time
        _remember(executable, facts)
    return facts


async def cli_facts(executable: str, env: Mapping[str, str]) -> CliFacts:
    """The remembered facts of this executable, or `probe`'s; raises StepFailed."""
    return _recalled(executable) or await probe(executable, env)


async def checked_argv(argv: Sequence[str], env: Mapping[str, str]) -> tuple[list[str], CliFacts]:
    """`argv` adapted to the CLI it names, and that CLI's facts; raises CliUnsupported."""
    try:
        facts = await cli_facts(argv[0], env)
    except StepFailed as exc:
        code = "unavailable" if exc.code == "start_failed" else "cli_unsupported"
        raise CliUnsupported(f"could not check the claude CLI: `claude --version` or `--help` {exc}", code) from None
    if facts.version is None:
        raise CliUnsupported("could not read a version from `claude --version`: reinstall Claude Code")
    try:
        return compatibility.adapt_argv(argv, facts.version, facts.listed), facts
    except compatibility.MissingFlag as exc:
        raise CliUnsupported(str(exc)) from None


def request_flags() -> list[str]:
    """Every flag a child may be given, read off the argv builder itself with every optional
    part switched on, so the list cannot drift from what requests pass."""
    argv = build_argv("claude", model="sonnet", system_prompt_file=Path("system-prompt.txt"),
                      mcp_config_file=Path("mcp.json"), tools=("WebSearch",), allowed_tools=("WebSearch",),
                      effort="high")
    return compatibility.argv_flags(argv)


def _identity(executable: str) -> str | None:
    """The resolved path and file identity: it changes when the CLI is replaced."""
    try:
        real = os.path.realpath(executable)
        info = os.stat(real)
    except OSError:
        return None
    return f"{real}\0{info.st_dev}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}"


def _cache_directory() -> Path:
    """`$XDG_CACHE_HOME/hostlink` of the host's user (a relative XDG_CACHE_HOME is ignored;
    `%LOCALAPPDATA%` on Windows)."""
    return cache_home(os.environ) / "hostlink"


def _recalled(executable: str) -> CliFacts | None:
    key = _identity(executable)
    stored = read_private_json(_cache_directory() / CACHE_FILE, MAX_CACHE_BYTES)
    entry = stored.get(key) if isinstance(stored, dict) and key is not None else None
    if not isinstance(entry, dict):
        return None
    at, version, listed = entry.get("at"), entry.get("version"), entry.get("listed")
    fresh = isinstance(at, (int, float)) and 0 <= time.time() - at < CACHE_SECONDS
    if not fresh or not isinstance(listed, list) or not all(isinstance(name, str) for name in listed):
        return None
    if version is not None and not (isinstance(version, str) and compatibility.parse_version(version)):
        return None
    return CliFacts(compatibility.parse_version(version) if version else None, frozenset(listed))


def _remember(executable: str, facts: CliFacts) -> None:
    """Best effort: a cache that cannot be written only costs the next request a probe."""
    key = _identity(executable)
    if key is None:
        return
    directory = _cache_directory()
    try:
        ensure_private_dir(directory)
        stored = read_private_json(directory / CACHE_FILE, MAX_CACHE_BYTES)
        entries = dict(stored) if isinstance(stored, dict) else {}
        entries.pop(key, None)
        entries[key] = {"at": time.time(), "version": facts.shown_version, "listed": sorted(facts.listed)}
        kept = dict(list(entries.items())[-MAX_CACHE_ENTRIES:])
        replace_private_file(directory, CACHE_FILE, json.dumps(kept))
    except (OSError, PrivateStateError):
        pass
