"""`hostlink claude-code doctor`: real CLI checks, fix-it messages, a content-free report."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner

from claude_transport_support import help_text, live_processes_mentioning
from hostlink.claude_code import compatibility, doctor, metrics, preflight
from hostlink.cli.claude_code import claude_code_group
from peers import CLAUDE_BIN, CLAUDE_VERSION, requires_claude

PROMPT = "PROMPT-TEXT-that-must-never-appear-in-a-report"
real_cli = requires_claude

SIGNED_IN = {
    "loggedIn": True,
    "authMethod": "claude.ai",
    "apiProvider": "firstParty",
    "subscriptionType": "max",
    "email": "someone@example.com",
    "orgName": "Secret Org",
    "configDirectory": "/home/someone/.claude",
}


def fake_cli(directory: Path, version: str = "2.1.332 (Claude Code)", auth: dict | None = None,
             hang: bool = False, lacks=()) -> Path:
    """A tiny stand-in `claude` that answers `--version`, `--help` and `auth status`."""
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / "claude"
    # Hanging, it keeps its own path on its command line, so the test can look for it.
    body = f'exec "{sys.executable}" -c "import time; time.sleep(600)" "$0"\n' if hang else (
        f'case "$1" in\n  --version) echo {json.dumps(version)};;\n'
        f"  --help) cat <<'EOF'\n{help_text(lacks)}EOF\n;;\n"
        f"  auth) echo '{json.dumps(auth if auth is not None else SIGNED_IN)}';;\nesac\n"
    )
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)
    return script


def environ(tmp_path: Path, bin_dir: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {"HOME": str(home), "PATH": f"{bin_dir}:/usr/bin:/bin"}


def run(env) -> doctor.Diagnosis:
    return anyio.run(doctor.diagnose, env)


def checks(diagnosis) -> dict[str, doctor.Check]:
    return {check.key: check for check in diagnosis.checks}


# --- compatibility ------------------------------------------------------------------------


def test_pinned_cli_version_is_in_the_verified_range():
    pinned = json.loads((Path(__file__).resolve().parents[2] / "package.json").read_text())
    version = pinned["dependencies"]["@anthropic-ai/claude-code"]
    assert compatibility.check_version(f"{version} (Claude Code)")[0]


@pytest.mark.parametrize(
    ("text", "ok", "words"),
    [
        ("2.1.332 (Claude Code)", True, "verified"),
        ("2.1.100 (Claude Code)", False, "older"),
        ("3.0.0 (Claude Code)", False, "newer"),
        ("no version here", False, "could not read"),
    ],
)
def test_check_version(text, ok, words):
    result, message = compatibility.check_version(text)
    assert result is ok and words in message


def test_model_resolutions_cover_every_offered_model():
    from hostlink.claude_code.models import MODELS

    assert {"opus", "sonnet", "haiku"} <= {model.id for model in MODELS}
    assert set(compatibility.MODEL_RESOLUTIONS) == {model.id for model in MODELS}


# --- the doctor -----------------------------------------------------------------------------


@real_cli
@pytest.mark.slow
def test_real_cli_doctor_and_content_free_report(tmp_path, runtime_dir):
    env = environ(tmp_path, CLAUDE_BIN)
    parent_tmp = tmp_path / "tmp"
    parent_tmp.mkdir()
    env["TMPDIR"] = str(parent_tmp)  # the CLI leaves probe dirs in its TMPDIR: never the user's
    metrics.record({"outcome": "done", "duration_ms": 1234, "input_tokens": 11, "prompt": PROMPT,
                    "stop_reason": PROMPT, "error_code": "../../etc/passwd"})
    diagnosis = run(env)
    found = checks(diagnosis)
    assert found["cli"].ok and found["cli"].facts["version"] == CLAUDE_VERSION and found["cli"].facts["verified"]
    # The test HOME is not signed in: the doctor says so and how to fix it.
    assert not found["auth"].ok and "claude auth login" in found["auth"].line
    assert found["auth"].facts["loggedIn"] is False and found["auth"].facts["apiProvider"] == "firstParty"
    assert found["bridge"].ok and found["bridge"].facts["tools"] == 1
    assert not diagnosis.ok
    assert diagnosis.last_request["duration_ms"] == 1234
    assert list(parent_tmp.iterdir()) == []

    path = doctor.write_report(diagnosis)
    info = os.stat(path)
    assert stat.S_IMODE(info.st_mode) == 0o600 and info.st_size <= doctor.MAX_REPORT_BYTES
    raw = path.read_text()
    report = json.loads(raw)
    assert report["format"] == doctor.REPORT_FORMAT
    assert report["checks"]["cli"]["version"] == CLAUDE_VERSION
    assert report["last_request"] == {"outcome": "done", "duration_ms": 1234, "input_tokens": 11,
                                      "recorded_at": report["last_request"]["recorded_at"]}
    for secret in (PROMPT, str(tmp_path), env["HOME"], str(runtime_dir), "/tmp", "passwd", str(CLAUDE_BIN)):
        assert secret not in raw
    assert sorted(p.name for p in runtime_dir.iterdir()) == sorted([metrics.FILE_NAME, doctor.REPORT_FILE])
    for name in (metrics.FILE_NAME, doctor.REPORT_FILE):
        (runtime_dir / name).unlink()


def test_signed_in_unverified_version_is_a_warning(tmp_path, runtime_dir):
    bin_dir = tmp_path / "bin"
    fake_cli(bin_dir, version="2.9.0 (Claude Code)")
    diagnosis = run(environ(tmp_path, bin_dir))
    found = checks(diagnosis)
    assert found["cli"].ok and found["cli"].facts["verified"] is False and "newer" in found["cli"].line
    assert found["auth"].ok and found["auth"].line == "signed in with claude.ai (max)"
    assert diagnosis.ok
    raw = json.dumps(diagnosis.report())
    for secret in ("someone@example.com", "Secret Org", "/home/someone"):
        assert secret not in raw


@pytest.mark.parametrize(
    ("auth", "words"),
    [
        ({"loggedIn": False, "authMethod": "none", "apiProvider": "firstParty"}, "claude auth login"),
        ({**SIGNED_IN, "apiProvider": "bedrock"}, "third-party"),
        ({**SIGNED_IN, "authMethod": "console"}, "Claude subscription"),
    ],
)
def test_sign_in_problems_say_how_to_fix_them(tmp_path, runtime_dir, auth, words):
    bin_dir = tmp_path / "bin"
    fake_cli(bin_dir, auth=auth)
    found = checks(run(environ(tmp_path, bin_dir)))
    assert not found["auth"].ok and words in found["auth"].line


def test_cli_values_that_are_not_short_codes_are_dropped(tmp_path, runtime_dir):
    bin_dir = tmp_path / "bin"
    fake_cli(bin_dir, auth={**SIGNED_IN, "subscriptionType": "max\x1b[31m plan for /home/someone"})
    found = checks(run(environ(tmp_path, bin_dir)))
    assert found["auth"].facts["subscriptionType"] is None


def test_no_cli_on_path(tmp_path, runtime_dir):
    empty = tmp_path / "empty"
    empty.mkdir()
    diagnosis = run({"HOME": str(tmp_path), "PATH": str(empty)})
    found = checks(diagnosis)
    assert not found["cli"].ok and "npm install -g @anthropic-ai/claude-code" in found["cli"].line
    assert not found["auth"].ok and found["bridge"].ok and not diagnosis.ok


def test_hostlink_run_from_a_source_tree_reports_its_version_unknown(tmp_path, runtime_dir, monkeypatch):
    import importlib.metadata

    installed = importlib.metadata.version

    def version(name: str) -> str:
        if name == "hostlink":
            raise importlib.metadata.PackageNotFoundError(name)
        return installed(name)

    monkeypatch.setattr(importlib.metadata, "version", version)
    empty = tmp_path / "empty"
    empty.mkdir()
    platform_check = checks(run({"HOME": str(tmp_path), "PATH": str(empty)}))["platform"]
    assert platform_check.line.endswith(", hostlink unknown") and platform_check.facts["hostlink"] == "unknown"


def test_a_hanging_cli_is_bounded_and_stopped(tmp_path, runtime_dir, monkeypatch):
    monkeypatch.setattr(preflight, "CLI_TIMEOUT_SECONDS", 0.5)
    bin_dir = tmp_path / "bin"
    fake_cli(bin_dir, hang=True)
    found = checks(run(environ(tmp_path, bin_dir)))
    assert not found["cli"].ok and found["cli"].facts["error"] == "timeout"
    assert not found["auth"].ok and found["auth"].facts["error"] == "timeout"
    assert live_processes_mentioning(str(bin_dir)) == []
    assert list(runtime_dir.iterdir()) == []


def test_command_prints_checks_and_report_path(tmp_path, runtime_dir, monkeypatch):
    bin_dir = tmp_path / "bin"
    fake_cli(bin_dir)
    for key, value in environ(tmp_path, bin_dir).items():
        monkeypatch.setenv(key, value)
    result = CliRunner().invoke(claude_code_group, ["doctor", "--report"])
    assert result.exit_code == 0, result.output
    assert "ok   claude CLI" in result.output and "signed in with claude.ai (max)" in result.output
    report_line = result.output.strip().splitlines()[-1]
    assert report_line == f"report: {runtime_dir / doctor.REPORT_FILE}"
    (runtime_dir / doctor.REPORT_FILE).unlink()

    fake_cli(bin_dir, auth={"loggedIn": False})
    assert CliRunner().invoke(claude_code_group, ["doctor"]).exit_code == 1


def test_metrics_keep_only_allowlisted_facts(runtime_dir):
    assert metrics.last() is None
    metrics.record({"duration_ms": 5.5, "tools": 3, "outcome": "error", "error_code": "auth_failed",
                    "model": "sonnet", "prompt": PROMPT, "records": True, "images": float("nan"),
                    "stop_reason": "has space", "cli_version": "say-something-private"})
    kept = metrics.last()
    assert kept == {"duration_ms": 5.5, "tools": 3, "outcome": "error", "error_code": "auth_failed",
                    "model": "sonnet", "recorded_at": kept["recorded_at"]}
    assert PROMPT not in (runtime_dir / metrics.FILE_NAME).read_text()
    assert stat.S_IMODE(os.stat(runtime_dir / metrics.FILE_NAME).st_mode) == 0o600
    (runtime_dir / metrics.FILE_NAME).unlink()


def test_the_doctor_says_whether_the_last_request_used_a_prewarmed_child(runtime_dir):
    metrics.record({"outcome": "done", "child": "prewarmed", "start_ms": 12})
    text = doctor.Diagnosis([], metrics.last()).text()
    assert "child=prewarmed" in text and "start_ms=12" in text
    assert "last request's claude: prewarmed (started while the host ran the tools" in text
    metrics.record({"outcome": "done", "child": "something else"})
    assert "child" not in metrics.last()  # a closed set of codes
    (runtime_dir / metrics.FILE_NAME).unlink()


def test_the_doctor_leaves_the_plan_to_the_usage_command(runtime_dir):
    from hostlink.claude_code import plan

    metrics.record({"outcome": "done", "plan": plan.PlanUsage(seen_at=1_900_000_000, status="allowed").to_json()})
    lines = doctor.Diagnosis([], metrics.last()).text().splitlines()
    assert lines[0].startswith("     last request: ") and "plan" not in lines[0] and "allowed" not in lines[0]
    assert lines[1:] == ["     plan usage: see `claude-code usage`"]  # and no child it did not report
    (runtime_dir / metrics.FILE_NAME).unlink()


def test_the_doctor_says_when_the_next_rounds_child_was_started(runtime_dir):
    metrics.record({"outcome": "done", "child": "prewarmed", "next_child": "ahead", "prewarmed_waiting": 2,
                    "prewarm_slots": 4})
    text = doctor.Diagnosis([], metrics.last()).text()
    assert "next round's claude: started before the prompt (a tool loop's round), idle until asked for" in text
    assert "prewarmed claudes waiting when it ended: 2 (at most 4, one per conversation in progress)" in text
    metrics.record({"outcome": "done", "next_child": "later"})
    assert "next_child" not in metrics.last()  # a closed set of codes
    (runtime_dir / metrics.FILE_NAME).unlink()


def test_command_module_import_is_cheap():
    code = (
        "import sys, hostlink.cli.claude_code; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'anyio', 'asyncio', 'mcp', 'keyring', 'llm', 'httpx2', 'subprocess'}))"
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.strip() == "[]"


# --- what a broken CLI or proposal server looks like ----------------------------------------


def test_a_cli_without_a_version_and_one_lacking_options(tmp_path, runtime_dir):
    bin_dir = tmp_path / "bin"
    fake_cli(bin_dir, version="")
    found = checks(run(environ(tmp_path, bin_dir)))
    assert not found["cli"].ok and found["cli"].facts["error"] == "no_version"
    assert found["cli"].line == f"{bin_dir / 'claude'}: `claude --version` gave no version"
    fake_cli(bin_dir, lacks=("--strict-mcp-config", "--no-session-persistence"))
    found = checks(run(environ(tmp_path, bin_dir)))
    assert not found["flags"].ok
    assert found["flags"].facts["missing"] == ["--strict-mcp-config", "--no-session-persistence"]
    assert found["flags"].line.endswith(" (it also lacks --no-session-persistence)")


@pytest.mark.parametrize(("script", "line"), [
    ("import sys; sys.stdin.read(); sys.stdout.write('junk\\n[1]\\n' + '{\"id\": 1, \"result\": {}}\\n')",
     "the proposal server did not answer initialize and tools/list"),
    ("import sys; sys.stdin.read(); sys.stdout.write(('x' * 1023 + '\\n') * 80)",
     "the proposal server wrote too much output"),
    ("import time; time.sleep(60)", "the proposal server did not finish within 1 seconds"),
], ids=["wrong-answers", "too-much-output", "hangs"])  # fmt: skip
def test_a_broken_proposal_server_fails_the_bridge_check(tmp_path, runtime_dir, monkeypatch, script, line):
    """Each reads its whole input first, as the real one does: exiting before the doctor wrote would be
    another failure ("failed while running")."""
    broken = tmp_path / "broken_server.py"
    broken.write_text(script + "\n")
    monkeypatch.setattr(doctor, "PROPOSAL_SERVER", broken)
    monkeypatch.setattr(doctor, "BRIDGE_TIMEOUT_SECONDS", 1.0)
    empty = tmp_path / "empty"
    empty.mkdir()
    found = checks(run({"HOME": str(tmp_path), "PATH": str(empty)}))
    assert not found["bridge"].ok and found["bridge"].line == line
    assert live_processes_mentioning(str(broken)) == []


def test_a_range_of_one_verified_version_is_named_as_that_version(monkeypatch):
    monkeypatch.setattr(compatibility, "VERIFIED_MAX", compatibility.VERIFIED_MIN)
    only = compatibility.show(compatibility.VERIFIED_MIN)
    assert compatibility.unverified_hint("9.9.9") == (
        f"claude 9.9.9 is newer than the verified range ({only}): look for a newer hostlink")


def test_advice_for_a_cli_outside_the_verified_range_or_one_that_exited_early():
    shown = compatibility.verified_range()
    assert compatibility.unverified_hint("9.9.9") == (
        f"claude 9.9.9 is newer than the verified range ({shown}): look for a newer hostlink")
    assert compatibility.early_exit_advice("2.1.332", ["boom"]) == (
        "it said: boom; run `claude` in a terminal to see the problem, or `claude update` (claude 2.1.332 is "
        f"installed) (hostlink is verified with claude {shown})")
