"""`hostlink claude-code usage --probe` when the probe cannot answer: one line saying why, no traceback
(the probe that answers runs against the real CLI in test_plan_real_cli.py)."""

from __future__ import annotations

import os

import click
import pytest
from click.testing import CliRunner

from claude_transport_support import OPENING
from hostlink.claude_code.extension import ClaudeCodeExtension
from hostlink.cli.claude_code import claude_code_group, show_usage


def test_without_claude_the_probe_says_so(tmp_path, runtime_dir):
    empty = tmp_path / "empty"
    empty.mkdir()
    result = CliRunner().invoke(claude_code_group, ["usage", "--probe"],
                                env={"PATH": str(empty), "HOME": str(tmp_path)})  # fmt: skip
    assert result.exit_code == 3
    assert result.output.splitlines()[-1].startswith(
        "claude-code usage: the probe failed: the claude CLI was not found on PATH: install Claude Code")


def test_a_probe_request_that_fails_says_why(fake, stored):
    fake.script(*OPENING, {"op": "result", "fields": {"subtype": "error_during_execution", "is_error": True}})
    environ = {"HOME": str(fake.home), "PATH": f"{fake.executable.parent}:{os.environ['PATH']}",
               "CLAUDE_CONFIG_DIR": str(fake.config_dir)}

    @click.command()
    def probe() -> None:
        show_usage(lambda: ClaudeCodeExtension(environ=environ), as_json=False, probe=True)

    result = CliRunner().invoke(probe, [])
    assert result.exit_code == 3
    assert result.output.splitlines()[-1].endswith("the probe failed: the Claude Code request failed")


@pytest.mark.anyio
async def test_the_usage_command_through_a_host_session(fake, tmp_path, runtime_dir):
    """What `/claude-code usage` shows in a host's own command line: no report yet, the guard's mode."""
    from hostlink.host import CancelSignal
    from hostlink.host.session import HostSession

    host = HostSession([ClaudeCodeExtension(extra_usage="refuse", environ={"HOME": str(tmp_path), "PATH": ""})],
                       lasting=False)  # fmt: skip
    await host.start(cwd=tmp_path, project_trusted=False, notifier=fake)
    try:
        text = await host.run_command("claude-code", ["usage"], CancelSignal())
    finally:
        await host.shutdown()
    assert text.startswith("Claude plan usage: unknown until the next request (no request has reported it yet;")
    assert text.endswith("extra usage guard: refuse")
