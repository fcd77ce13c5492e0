"""Launching and stopping the `claude` child: argv, allowlisted environment, its own tree.

The child starts in a tree of its own (`hostlink.host.platform.processes`: a process group
on POSIX, a Job Object on Windows), so stopping it ends exactly the tree this request
created: SIGTERM, then SIGKILL after a short grace (on Windows, the seed's `taskkill /PID
<pid> /T /F` and the job). Nothing is ever killed by name. Its environment is built from
an allowlist, so API keys, alternate routing (base URLs, Bedrock/Vertex), hooks and
arbitrary parent variables never reach it; only an explicit `ClaudeTransportOptions` passed
in code can point it at a local fake API in tests.
"""

from __future__ import annotations

import ipaddress
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from hostlink.host.output import one_line
from hostlink.host.platform.folders import cache_variables, temp_variables
from hostlink.host.platform.processes import ChildTree, start_child, system_variables
from hostlink.host.private import open_private_file

PROPOSAL_SERVER = Path(__file__).with_name("proposal_server.py")

ENV_ALLOWLIST = (
    "HOME", "PATH", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR",
    "CLAUDE_CONFIG_DIR",
    "CLAUDE_CODE_OAUTH_TOKEN",  # `claude setup-token`: the subscription's headless sign-in
    "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy",
    "ALL_PROXY", "all_proxy",
    "NODE_EXTRA_CA_CERTS",
)  # fmt: skip
FIXED_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1",
    "CLAUDE_CODE_DISABLE_GIT_INSTRUCTIONS": "1",
    "DISABLE_AUTO_COMPACT": "1",  # the host owns compaction
}

# Claude Code 2.1.332 enables these built-in plugins by default; they add context (for one,
# AGENTS.md discovery), so every request switches them off and init must list no plugin.
# That check also proves the settings were applied: in -p mode the CLI silently ignores
# settings that fail validation.
BUILTIN_PLUGINS = ("cc-plugin-agents-md", "cc-plugin-privacy", "cc-plugin-plugin-authoring")
SETTINGS = {
    "disableAllHooks": True,
    "autoMemoryEnabled": False,
    "includeGitInstructions": False,
    "autoCompactEnabled": False,
    "enabledPlugins": {f"{name}@builtin": False for name in BUILTIN_PLUGINS},
}

MAX_LINE_BYTES = 8 * 1024 * 1024
TERMINATE_GRACE_SECONDS = 0.5
EXIT_AFTER_SIGTERM = 143  # the CLI exits 128 + SIGTERM when it handles the signal itself
EFFORT_LEVELS = ("low", "medium", "high", "xhigh", "max")
STDERR_TAIL_BYTES = 4096
STDERR_TAIL_LINES = 3
STDERR_LINE_CHARS = 200


class ProcessError(RuntimeError):
    """The child could not be started, read, or stopped as required."""


@dataclass(frozen=True)
class ClaudeTransportOptions:
    """Test-only routing of the child to a local fake Messages API.

    Never read from the environment: a test constructs it in code. With it, the child gets
    `ANTHROPIC_BASE_URL` (loopback only), no API retries and one sign-in: either
    `ANTHROPIC_API_KEY` (`test_api_key`: init validation accepts exactly that key as the
    auth source instead of a subscription) or `CLAUDE_CODE_OAUTH_TOKEN`
    (`test_oauth_token`: a subscription sign-in as `claude setup-token` gives, under
    which the CLI reports the plan's rate limits).
    """

    test_api_base_url: str | None = None
    test_api_key: str | None = None
    test_oauth_token: str | None = None

    def __post_init__(self) -> None:
        signed_in = (self.test_api_key is not None) + (self.test_oauth_token is not None)
        if (self.test_api_base_url is None) != (signed_in == 0) or signed_in > 1:
            raise ValueError("test_api_base_url goes with exactly one of test_api_key and test_oauth_token")
        if self.test_api_base_url is not None:
            parts = urlsplit(self.test_api_base_url)
            try:
                loopback = ipaddress.ip_address(parts.hostname or "").is_loopback
            except ValueError:
                loopback = False
            if parts.scheme != "http" or not loopback:
                raise ValueError("test_api_base_url must be an http:// loopback address")

    @property
    def testing(self) -> bool:
        """Signed in by the test API key (not a subscription)."""
        return self.test_api_key is not None


def mcp_config(catalog_path: Path, marker_path: Path, server_name: str) -> str:
    """The `--mcp-config` document: the proposal server and nothing else."""
    server = {
        "type": "stdio",
        "command": sys.executable,
        "args": ["-I", "-S", str(PROPOSAL_SERVER), str(catalog_path), str(marker_path)],
        "env": {},
    }
    return json.dumps({"mcpServers": {server_name: server}})


def build_argv(
    executable: str,
    *,
    model: str,
    system_prompt_file: Path,
    mcp_config_file: Path | None,
    tools: Sequence[str] = (),
    allowed_tools: Sequence[str] = (),
    effort: str | None = None,
    max_turns: int = 1,
) -> list[str]:
    """The headless request argv (stream-json in and out, dontAsk, nothing unmanaged loaded).

    `tools` are the built-in tools to enable (none for the main provider). Variadic flags
    (`--tools`, `--allowedTools`, `--mcp-config`) are each followed by another flag,
    so none can swallow a later argument; no positional prompt is ever passed.
    """
    if effort is not None and effort not in EFFORT_LEVELS:
        raise ValueError(f"effort must be one of {', '.join(EFFORT_LEVELS)}")
    argv = [
        executable, "-p",
        "--setting-sources", "",
        "--settings", json.dumps(SETTINGS, separators=(",", ":")),
        "--disable-slash-commands",
        "--strict-mcp-config",
        "--permission-mode", "dontAsk",
        "--permission-prompts", "none",
        "--no-session-persistence",
        # One model turn: even before the group is stopped, the CLI never sends a follow-up
        # request after a proposal (without it, it answers its own denial at once).
        "--max-turns", str(max_turns),
    ]  # fmt: skip
    if mcp_config_file is not None:
        argv += ["--mcp-config", str(mcp_config_file)]
    argv += ["--tools", ",".join(tools)]
    if allowed_tools:
        argv += ["--allowedTools", ",".join(allowed_tools)]
    argv += ["--model", model]
    if effort is not None:
        argv += ["--effort", effort]
    argv += [
        "--input-format", "stream-json",
        "--output-format", "stream-json",
        "--include-partial-messages",
        "--verbose",
        "--system-prompt-file", str(system_prompt_file),
    ]  # fmt: skip
    return argv


def child_environment(
    parent: Mapping[str, str], options: ClaudeTransportOptions, temp_dir: Path | None = None,
    max_output_tokens: int | None = None,
) -> dict[str, str]:
    """Allowlisted parent variables plus the fixed switches; never keys or routing.

    `temp_dir` (a private directory of the request): see `private_dirs`.
    `max_output_tokens` (the request's own cap, never the parent's variable) becomes
    `CLAUDE_CODE_MAX_OUTPUT_TOKENS`, which the CLI sends as the API's `max_tokens`.
    """
    env = {name: parent[name] for name in (*ENV_ALLOWLIST, *system_variables()) if name in parent}
    env.update(FIXED_ENV)
    if max_output_tokens is not None:
        if isinstance(max_output_tokens, bool) or not isinstance(max_output_tokens, int) or max_output_tokens < 1:
            raise ValueError("max_output_tokens must be a positive integer")
        env["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] = str(max_output_tokens)
    if temp_dir is not None:
        env.update(private_dirs(temp_dir))
    if options.test_api_base_url is not None:
        env["ANTHROPIC_BASE_URL"] = options.test_api_base_url
        env["CLAUDE_CODE_MAX_RETRIES"] = "0"
        if options.test_api_key is not None:
            env.pop("CLAUDE_CODE_OAUTH_TOKEN", None)
            env["ANTHROPIC_API_KEY"] = options.test_api_key
        else:
            assert options.test_oauth_token is not None
            env["CLAUDE_CODE_OAUTH_TOKEN"] = options.test_oauth_token
    return env


def private_dirs(temp_dir: Path) -> dict[str, str]:
    """Where the child writes what it never removes, pointed into the request's private state.

    The CLI leaves per-session directories under `$TMPDIR/claude-<uid>/` and one log file per
    start of each MCP server under `$XDG_CACHE_HOME/claude-cli-nodejs/<cwd>/mcp-logs-<server>/`
    (`~/.cache` by default): both go with the request's private directory. On Windows the
    same come from `TEMP` and `%LOCALAPPDATA%` (`temp_variables`, `cache_variables`).
    """
    return {name: str(temp_dir) for name in (*temp_variables(), *cache_variables())}


class ClaudeProcess:
    """One running child in a tree of its own, with bounded line reads of stdout."""

    def __init__(self, process: Process, tree: ChildTree, stderr_path: Path) -> None:
        self._process = process
        self._tree = tree
        assert process.stdout is not None
        self._stdout = BufferedByteReceiveStream(process.stdout)
        self._stderr_path = stderr_path
        self.escalated = False  # True if a forced stop (SIGKILL) was needed

    @classmethod
    async def start(
        cls, argv: Sequence[str], env: Mapping[str, str], cwd: Path, stderr_path: Path
    ) -> ClaudeProcess:
        """Start the child; its stderr goes to `stderr_path` (a new private 0600 file).

        A file rather than a pipe, so nothing has to drain it while the request streams. A
        caller already cancelled starts nothing.
        """
        with open_private_file(stderr_path.parent, stderr_path.name) as stderr:
            try:
                process, tree = await start_child(list(argv), env=env, cwd=str(cwd), stderr=stderr)
            except OSError as exc:
                raise ProcessError(f"could not start claude ({exc.strerror or type(exc).__name__})") from None
        return cls(process, tree, stderr_path)

    @property
    def pid(self) -> int:
        return self._process.pid

    def stderr_tail(self, private: Mapping[str, str]) -> list[str]:
        """The child's last stderr lines, so an early exit can say why (e.g. `error: unknown
        option`): bounded, sanitized (no escapes or control characters), each key of
        `private` (the request's directory, HOME) replaced by its value.

        Only for a child that exited before it was given a prompt: its stderr cannot hold
        request content then.
        """
        try:
            with open(self._stderr_path, "rb") as handle:
                start = max(0, os.fstat(handle.fileno()).st_size - STDERR_TAIL_BYTES)
                handle.seek(start)
                data = handle.read(STDERR_TAIL_BYTES)
        except OSError:
            return []
        if start:
            data = data.partition(b"\n")[2]  # the first line is cut: leave it out
        text = data.decode("utf-8", "replace")
        for path, shown in sorted(private.items(), key=lambda item: -len(item[0])):
            if path:
                text = text.replace(path, shown)
        lines = [one_line(line, STDERR_LINE_CHARS) for line in text.splitlines()]
        return [line for line in lines if line][-STDERR_TAIL_LINES:]

    async def send_line(self, data: bytes) -> None:
        assert self._process.stdin is not None
        try:
            await self._process.stdin.send(data + b"\n")
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            raise ProcessError("claude stopped reading its input") from None

    async def close_stdin(self) -> None:
        assert self._process.stdin is not None
        await self._process.stdin.aclose()

    async def receive_line(self) -> bytes | None:
        """The next stdout line without its newline; None at end of output."""
        try:
            line = await self._stdout.receive_until(b"\n", MAX_LINE_BYTES)
        except anyio.IncompleteRead:
            return None
        except anyio.DelimiterNotFound:
            line = None
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            return None
        # receive_until may return a line found in one chunk that is already too long.
        if line is None or len(line) > MAX_LINE_BYTES:
            raise ProcessError(f"claude wrote a record longer than {MAX_LINE_BYTES} bytes")
        return line

    def group_alive(self) -> bool:
        """Whether any live process of our tree (group or job) still runs."""
        return self._tree.alive()

    async def terminate(self) -> int:
        """Stop the whole tree: SIGTERM, SIGKILL after the grace; returns the exit status.

        Also waits until no member of the group remains (the proposal server included).
        """
        with anyio.CancelScope(shield=True):
            if self._process.returncode is None or self.group_alive():
                self._tree.stop(forced=False)
                with anyio.move_on_after(TERMINATE_GRACE_SECONDS):
                    await self._process.wait()
                    while self.group_alive():
                        await anyio.sleep(0.01)
                if self._process.returncode is None or self.group_alive():
                    self.escalated = True
                    self._tree.stop(forced=True)
            returncode = await self._process.wait()
            await self._wait_group_gone()
            await self._close_pipes()
        return returncode

    async def wait(self) -> int:
        """Wait for the child to exit on its own, then make sure its group is gone."""
        returncode = await self._process.wait()
        with anyio.CancelScope(shield=True):
            await self._wait_group_gone()
        return returncode

    async def _wait_group_gone(self) -> None:
        with anyio.move_on_after(TERMINATE_GRACE_SECONDS):
            while self.group_alive():
                await anyio.sleep(0.01)
        if self.group_alive():
            self.escalated = True
            self._tree.stop(forced=True)
            with anyio.move_on_after(2):
                while self.group_alive():
                    await anyio.sleep(0.01)
        try:
            if self.group_alive():
                raise ProcessError("a process of the claude group survived SIGKILL")
        finally:
            self._tree.close()  # on Windows the job's last handle: it ends whatever is left

    async def _close_pipes(self) -> None:
        for stream in (self._process.stdin, self._process.stdout):
            if stream is not None:
                try:
                    await stream.aclose()
                except (OSError, anyio.BrokenResourceError):
                    pass
