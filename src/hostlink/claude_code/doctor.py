"""`hostlink claude-code doctor`: is the Claude Code provider able to run here, and why not.

Every step is time-bounded and runs the CLI with the same allowlisted environment a request
uses, so the answers describe what the provider will see. The optional report holds only
content-free facts (versions, codes, booleans, counts, timings): never prompts, messages,
arguments, results, credentials or temporary paths, and stderr only as the last request's
`exit_stderr` (see `metrics`: the sanitized last words of a
claude that exited before it saw a prompt). Values that come from the CLI are kept only
when they are short identifiers.
"""

from __future__ import annotations

import json
import os
import platform
import re
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hostlink.claude_code import compatibility, metrics, preflight
from hostlink.claude_code.catalog import build_catalog
from hostlink.claude_code.preflight import StepFailed as _StepFailed
from hostlink.claude_code.preflight import run_argv as _run_argv
from hostlink.claude_code.preflight import run_command as _run
from hostlink.claude_code.process import (
    PROPOSAL_SERVER,
    ClaudeTransportOptions,
    child_environment,
)
from hostlink.host import ToolDefinition
from hostlink.host.private import (
    create_private_dir,
    remove_private_dir,
    replace_private_file,
    runtime_root,
    write_private_file,
)

REPORT_FORMAT = "hostlink-claude-code-doctor/1"
REPORT_FILE = "claude-code-doctor.json"
MAX_REPORT_BYTES = 16 * 1024
BRIDGE_TIMEOUT_SECONDS = 10.0
_CODE = re.compile(r"[A-Za-z0-9_.-]{1,64}")
# `claude auth status` authMethod of a subscription: `claude auth login`, or the token of
# `claude setup-token` in CLAUDE_CODE_OAUTH_TOKEN (no subscriptionType is reported then).
SUBSCRIPTION_SIGN_INS = {"claude.ai": "with claude.ai", "oauth_token": "with a setup token (CLAUDE_CODE_OAUTH_TOKEN)"}
_PROBE_TOOL = ToolDefinition("doctor_probe", "A tool that only exists to be listed.", {"type": "object"})


@dataclass
class Check:
    """One step: whether it passed, a line for the terminal, and facts for the report."""

    key: str  # the report's name for the step
    name: str
    ok: bool
    line: str
    facts: dict[str, Any] = field(default_factory=dict)
    required: bool = True


_CHILD = {
    "prewarmed": "prewarmed (started while the host ran the tools of the request before)",
    "replaced": "started fresh (its conversation's prewarmed one did not match the request and was stopped)",
    "fresh": "started fresh",
}
_NEXT_CHILD = {
    "ahead": "started before the prompt (a tool loop's round), idle until asked for or its idle bound",
    "proposal": "started when the answer proposed tools, idle until asked for or its idle bound",
    "after": "started when the request had ended (extra usage `refuse`), idle until asked for or its idle bound",
}


@dataclass
class Diagnosis:
    checks: list[Check]
    last_request: dict[str, Any] | None

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.checks if check.required)

    def text(self) -> str:
        lines = [f"{'ok  ' if c.ok else ('FAIL' if c.required else 'warn')} {c.name}: {c.line}" for c in self.checks]
        if self.last_request is None:
            lines.append("     last request: none recorded")
        else:
            shown = ", ".join(f"{key}={value}" for key, value in sorted(self.last_request.items()) if key != "plan")
            lines.append(f"     last request: {shown}")
            if "plan" in self.last_request:
                lines.append("     plan usage: see `claude-code usage`")
            if self.last_request.get("child") in _CHILD:
                lines.append(f"     last request's claude: {_CHILD[self.last_request['child']]}")
            if self.last_request.get("next_child") in _NEXT_CHILD:
                lines.append(f"     next round's claude: {_NEXT_CHILD[self.last_request['next_child']]}")
            if "prewarmed_waiting" in self.last_request and "prewarm_slots" in self.last_request:
                lines.append(f"     prewarmed claudes waiting when it ended: {self.last_request['prewarmed_waiting']} "
                             f"(at most {self.last_request['prewarm_slots']}, one per conversation in progress)")
        return "\n".join(lines)

    def report(self) -> dict[str, Any]:
        return {
            "format": REPORT_FORMAT,
            "generated_at": int(time.time()),
            "ok": self.ok,
            "checks": {c.key: {"ok": c.ok, **c.facts} for c in self.checks},
            "last_request": self.last_request,
        }


def write_report(diagnosis: Diagnosis) -> Path:
    """Replace the private 0600 report file and return its path."""
    data = json.dumps(diagnosis.report(), sort_keys=True, indent=2)
    if len(data.encode()) > MAX_REPORT_BYTES:  # pragma: no cover - bounded by construction
        raise ValueError("the doctor report exceeds its size bound")
    return replace_private_file(runtime_root(), REPORT_FILE, data)


async def diagnose(environ: Mapping[str, str] | None = None) -> Diagnosis:
    env_source = os.environ if environ is None else environ
    env = child_environment(env_source, ClaudeTransportOptions())
    checks = [_platform()]
    executable = compatibility.find_claude(env_source)
    cli, facts = await _cli(executable, env)
    checks += [cli, _flags(facts)]
    checks.append(await _auth(executable, env))
    checks.append(await _bridge())
    return Diagnosis(checks, metrics.last())


def _platform() -> Check:
    from hostlink import installed_version

    hostlink_version = installed_version()
    facts = {
        "system": _code(platform.system()),
        "release": _code(platform.release()),
        "machine": _code(platform.machine()),
        "python": _code(platform.python_version()),
        "hostlink": _code(hostlink_version),
    }
    line = (f"{facts['system']} {facts['release']} {facts['machine']}, Python {facts['python']}, "
            f"hostlink {facts['hostlink']}")
    return Check("platform", "platform", True, line, facts, required=False)


async def _cli(executable: str | None, env: Mapping[str, str]) -> tuple[Check, preflight.CliFacts | None]:
    """`claude --version` and `--help`, asked afresh (and remembered for requests)."""
    if executable is None:
        return Check(
            "cli",
            "claude CLI",
            False,
            "not found on PATH: install Claude Code (npm install -g @anthropic-ai/claude-code) and sign in",
            {"found": False},
        ), None
    started = time.monotonic()
    try:
        cli = await preflight.probe(executable, env)
    except _StepFailed as exc:
        return Check("cli", "claude CLI", False, f"`claude --version` {exc}", {"found": True, "error": exc.code}), None
    facts: dict[str, Any] = {"found": True, "ms": _ms(started), "verified_range": compatibility.verified_range()}
    if cli.shown_version is None:
        facts["error"] = "no_version"
        return Check("cli", "claude CLI", False, f"{executable}: `claude --version` gave no version", facts), None
    verified, message = compatibility.check_version(cli.shown_version)
    facts.update(version=cli.shown_version, verified=verified)
    # An unverified version is a warning, not a failure: the flag check and the runtime
    # checks of every request still hold.
    return Check("cli", "claude CLI", True, f"{executable}: {message}", facts), cli


def _flags(cli: preflight.CliFacts | None) -> Check:
    """Every option a request may pass, against what this CLI has (see `compatibility.FLAGS`)."""
    if cli is None:
        return Check("flags", "claude options", False, "skipped: no claude CLI version", {"error": "no_cli"})
    flags = preflight.request_flags()
    lacking = [flag for flag in flags if not compatibility.has_flag(flag, cli.version, cli.listed)]
    missing = [flag for flag in lacking if compatibility.FLAGS[flag].fallback is None]
    dropped = [flag for flag in lacking if flag not in missing]
    facts: dict[str, Any] = {"checked": len(flags), "missing": missing, "dropped": dropped}
    if missing:
        message = str(compatibility.MissingFlag(missing[0], cli.version))
        if len(missing) > 1:
            message += f" (it also lacks {', '.join(missing[1:])})"
        return Check("flags", "claude options", False, message, facts)
    line = f"has all {len(flags)} options hostlink passes"
    if dropped:
        reasons = "; ".join(f"{flag}: {compatibility.FLAGS[flag].fallback}" for flag in dropped)
        line += f" but {', '.join(dropped)}, left out of requests ({reasons})"
    return Check("flags", "claude options", True, line, facts)


async def _auth(executable: str | None, env: Mapping[str, str]) -> Check:
    if executable is None:
        return Check("auth", "sign-in", False, "skipped: no claude CLI", {"error": "no_cli"})
    started = time.monotonic()
    try:
        _, output = await _run(executable, ["auth", "status", "--json"], env)
    except _StepFailed as exc:
        return Check("auth", "sign-in", False, f"`claude auth status` {exc}", {"error": exc.code})
    try:
        status = json.loads(output)
    except ValueError:
        status = None
    if not isinstance(status, dict):
        return Check("auth", "sign-in", False, "`claude auth status` did not answer JSON", {"error": "unparseable"})
    facts: dict[str, Any] = {
        "ms": _ms(started),
        "loggedIn": status.get("loggedIn") is True,
        "authMethod": _code(status.get("authMethod")),
        "apiProvider": _code(status.get("apiProvider")),
        "subscriptionType": _code(status.get("subscriptionType")),
    }
    problem = None
    if not facts["loggedIn"]:
        problem = "not signed in: run `claude auth login` (or `claude`, then /login)"
    elif facts["apiProvider"] != "firstParty":
        problem = "claude is routed to a third-party API provider, not a Claude subscription"
    elif facts["authMethod"] not in SUBSCRIPTION_SIGN_INS:
        problem = "claude is not signed in with a Claude subscription (sign in with a claude.ai account)"
    if problem is not None:
        return Check("auth", "sign-in", False, problem, facts)
    plan = facts["subscriptionType"] or "unknown plan"
    return Check("auth", "sign-in", True, f"signed in {SUBSCRIPTION_SIGN_INS[facts['authMethod']]} ({plan})", facts)


async def _bridge() -> Check:
    """Start the proposal server as a request would and time initialize + tools/list."""
    catalog = build_catalog([_PROBE_TOOL], [])
    directory = create_private_dir("claude-doctor")
    started = time.monotonic()
    try:
        catalog_path = write_private_file(directory, "catalog.json", catalog.to_json())
        argv = [sys.executable, "-I", "-S", str(PROPOSAL_SERVER), str(catalog_path), str(directory / "violation.json")]
        requests = [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": {"name": "doctor", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
        ]  # fmt: skip
        stdin = b"".join(json.dumps(r).encode() + b"\n" for r in requests)
        try:
            _, output = await _run_argv(argv, {}, directory, stdin, BRIDGE_TIMEOUT_SECONDS)
        except _StepFailed as exc:
            return Check("bridge", "proposal bridge", False, f"the proposal server {exc}", {"error": exc.code})
        elapsed = _ms(started)
        answers = {}
        for record in output.splitlines():
            try:
                message = json.loads(record)
            except ValueError:
                continue
            if isinstance(message, dict):
                answers[message.get("id")] = message
        tools = answers.get(2, {}).get("result", {}).get("tools")
        served = [tool.get("name") for tool in tools] if isinstance(tools, list) else None
        if "result" not in answers.get(1, {}) or served != [entry.alias for entry in catalog.entries]:
            line = "the proposal server did not answer initialize and tools/list"
            return Check("bridge", "proposal bridge", False, line, {"error": "bad_answer"})
        line = f"initialize + tools/list answered in {elapsed} ms"
        return Check("bridge", "proposal bridge", True, line, {"ms": elapsed, "tools": len(served)})
    finally:
        remove_private_dir(directory)


def _code(value: Any) -> str | None:
    """A short identifier from the CLI or the platform, or None (never arbitrary text)."""
    return value if isinstance(value, str) and _CODE.fullmatch(value) else None


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
