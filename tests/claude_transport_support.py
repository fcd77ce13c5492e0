"""Helpers for the Claude transport tests: the fake `claude`, event collection, leak checks.
The `api` (the fake Anthropic API) and `home` (a throwaway HOME) fixtures are in tests/conftest.py."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from hostlink.claude_code.process import ClaudeTransportOptions
from hostlink.claude_code.provider import ClaudeCodeProvider
from hostlink.host import CancelSignal, Context, ModelSpec, TextContent, ToolDefinition, UserMessage

FAKES = Path(__file__).parent / "fakes"
sys.path.insert(0, str(FAKES))
import fake_anthropic as fa  # noqa: E402, F401 - the tests and conftest take it from here

MODEL = ModelSpec("sonnet", "Claude Sonnet")
ECHO = ToolDefinition("echo", "Echo the text back", {"type": "object", "properties": {"text": {"type": "string"}}})
DOTTED = ToolDefinition("files.read", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}})


# What the real 2.1.332 lists in --help, in its layout (a subset: the options hostlink may pass).
HELP_OPTIONS = ["--allowedTools, --allowed-tools <tools...>", "--disable-slash-commands", "--effort <level>",
                "--include-partial-messages", "--input-format <format>", "--json-schema <schema>",
                "--mcp-config <configs...>", "--model <model>", "--no-session-persistence",
                "--output-format <format>", "--permission-mode <mode>", "--permission-prompts <target>",
                "-p, --print", "--setting-sources <sources>", "--settings <file-or-json>",
                "--strict-mcp-config", "--system-prompt <prompt>", "--tools <tools...>", "--verbose",
                "-v, --version"]


def help_text(lacks=()) -> str:
    """A `claude --help` in the real CLI's layout listing `HELP_OPTIONS` minus `lacks`."""
    kept = [option for option in HELP_OPTIONS if not any(name.split(" ")[0] in lacks for name in option.split(", "))]
    return "Usage: claude [options]\n\nOptions:\n" + "".join(f"  {option:36}  An option\n" for option in kept)


# The wrapper answers --version and --help from files FakeClaude.script writes (no Python
# start: each fake executable is asked once per test) and logs them; the rest is the fake's.
WRAPPER = """#!/bin/sh
if [ "$#" = 1 ] && {{ [ "$1" = --version ] || [ "$1" = --help ]; }}; then
  printf '{{"kind": "preflight", "value": ["%s"]}}\\n' "$1" >> "$CLAUDE_CONFIG_DIR/fake-claude-log.jsonl"
  exec cat "$CLAUDE_CONFIG_DIR/fake-claude$1.txt"
fi
exec "{python}" "{fake}" "$@"
"""


def live_processes_mentioning(text: str, unless: str | None = None) -> list[int]:
    """Pids of live (non-zombie) processes whose command line contains `text` (and not `unless`)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_bytes()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        state = stat.rsplit(b")", 1)[1].split()[0]
        excluded = unless is not None and unless.encode() in cmdline
        if state not in (b"Z", b"X") and text.encode() in cmdline and not excluded:
            found.append(int(entry))
    return found


def context(text: str = "hello", tools=(ECHO,), messages=None) -> Context:
    messages = messages if messages is not None else [UserMessage([TextContent(text)])]
    return Context("You are a test host.", messages, list(tools))


async def collect(provider: ClaudeCodeProvider, ctx: Context, signal: CancelSignal | None = None) -> list[Any]:
    return [event async for event in provider.stream(MODEL, ctx, signal or CancelSignal())]


def records(request: dict) -> list[dict]:
    """The transcript records (JSON texts) Claude was sent in one API request."""
    found = []
    for message in request["messages"]:
        if message["role"] != "user" or isinstance(message["content"], str):
            continue
        for block in message["content"]:
            if block.get("type") == "text":
                for line in block["text"].splitlines():
                    try:
                        found.append(json.loads(line))
                    except ValueError:
                        continue
    return found


class FakeClaude:
    """A fake `claude` install: a wrapper executable plus a per-test script and log."""

    def __init__(self, tmp_path: Path) -> None:
        self.config_dir = tmp_path / "claude-config"
        self.config_dir.mkdir()
        self.home = tmp_path / "home"
        self.home.mkdir()
        self.executable = tmp_path / "bin" / "claude"
        self.executable.parent.mkdir()
        self.executable.write_text(WRAPPER.format(python=sys.executable, fake=FAKES / "fake_claude.py"))
        self.executable.chmod(0o755)
        self.notices: list[tuple[str, str]] = []
        self._preflight("2.1.332", ())

    def script(self, *steps: dict[str, Any], version: str = "2.1.332", lacks=(), **cli: Any) -> None:
        """The steps of every start; `version` and `lacks` shape `--version` and
        `--help`; `cli` may set `stderr` (see `fake_claude.py`)."""
        (self.config_dir / "fake-claude.json").write_text(json.dumps({"steps": list(steps), **cli}))
        self._preflight(version, lacks)

    def script_runs(self, *runs: list[dict[str, Any]]) -> None:
        """One script per start of the fake, in order (see `fake_claude.py`)."""
        (self.config_dir / "fake-claude.json").write_text(json.dumps({"runs": list(runs)}))
        self._preflight("2.1.332", ())

    def _preflight(self, version: str, lacks) -> None:
        (self.config_dir / "fake-claude--version.txt").write_text(f"{version} (Claude Code)\n")
        (self.config_dir / "fake-claude--help.txt").write_text(help_text(lacks))

    def log(self) -> list[dict[str, Any]]:
        path = self.config_dir / "fake-claude-log.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]

    def logged(self, kind: str) -> list[Any]:
        return [entry["value"] for entry in self.log() if entry["kind"] == kind]

    def notify(self, message: str, level: str = "info") -> None:
        self.notices.append((message, level))

    def provider(self, extra_env: dict[str, str] | None = None,
                 options: ClaudeTransportOptions | None = None) -> ClaudeCodeProvider:
        environ = {"HOME": str(self.home), "PATH": os.environ["PATH"], "CLAUDE_CONFIG_DIR": str(self.config_dir)}
        environ.update(extra_env or {})
        return ClaudeCodeProvider(
            str(self.executable), cwd=self.home, notifier=self, options=options, environ=environ
        )


# The usual opening of a request: control handshake, user message, a valid init.
OPENING = ({"op": "control"}, {"op": "read_user"}, {"op": "init"})
