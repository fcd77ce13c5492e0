"""Lasting project trust: `hostlink mcp trust` / `untrust` on real files in a temporary HOME. The
commands run in this process (what they decide is under test here); the first `trust` and
`untrust` of the first test run as a real `hostlink` process, their end-to-end run."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from hostlink.host.trust import find_project, project_trust, records_file
from mcp_cli_support import run_here
from mcp_config_support import environment

SERVER = {"mcpServers": {"proj": {"command": "/bin/true"}}}


def run(tmp_path: Path, cwd: Path, *argv: str, real: bool = False, **extra: str) -> subprocess.CompletedProcess[str]:
    if not real:
        return run_here(environment(tmp_path, **extra), cwd, argv, None)
    code = "import sys\nfrom hostlink.cli import main\nsys.argv[0] = 'hostlink'\nmain()"
    result = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=cwd,
                            env=environment(tmp_path, **extra), stdin=subprocess.DEVNULL, timeout=60)
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    return result


def project(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / ".mcp.json").write_text(json.dumps(SERVER))
    deep = root / "src" / "deep"
    deep.mkdir(parents=True)
    return root, deep


def listed(result: subprocess.CompletedProcess[str]) -> bool:
    return "proj " in result.stdout


def test_trust_lasts_from_any_subdirectory_until_the_files_change(tmp_path):
    root, deep = project(tmp_path)
    before = run(tmp_path, deep, "mcp", "status")
    assert not listed(before) and "ignored servers of the untrusted project" in before.stderr
    trusted = run(tmp_path, deep, "mcp", "trust", real=True)
    assert trusted.returncode == 0 and f"trusted {root}" in trusted.stdout and ".mcp.json" in trusted.stdout
    records = records_file(environment(tmp_path))
    assert stat.S_IMODE(records.stat().st_mode) == 0o600
    assert list(json.loads(records.read_text())["projects"]) == [str(root)]
    assert listed(run(tmp_path, deep, "mcp", "status")) and listed(run(tmp_path, root, "mcp", "status"))

    (root / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": {"command": "/bin/false"}}}))
    changed = run(tmp_path, deep, "mcp", "status")
    assert not listed(changed) and "changed since trusted" in changed.stderr
    assert listed(run(tmp_path, deep, "mcp", "status", "--trust-project"))  # after the subcommand
    assert listed(run(tmp_path, deep, "mcp", "--trust-project", "status"))
    assert listed(run(tmp_path, deep, "mcp", "status", HOSTLINK_TRUST_PROJECT="1"))

    assert run(tmp_path, deep, "mcp", "trust").returncode == 0
    assert listed(run(tmp_path, deep, "mcp", "status"))
    (root / ".hostlink").mkdir()
    (root / ".hostlink" / "mcp.json").write_text(json.dumps({"mcpServers": {}}))  # a new file counts too
    assert "changed since trusted" in run(tmp_path, deep, "mcp", "status").stderr

    assert run(tmp_path, deep, "mcp", "untrust", real=True).stdout.strip() == f"{root}: no longer trusted"
    assert run(tmp_path, deep, "mcp", "untrust").stdout.strip() == f"{root}: was not trusted"
    assert not listed(run(tmp_path, deep, "mcp", "status"))


def test_trust_of_a_directory_argument_and_through_a_symlink(tmp_path):
    root, _deep = project(tmp_path)
    link = tmp_path / "link"
    link.symlink_to(root)
    assert run(tmp_path, tmp_path, "mcp", "trust", str(link / "src")).returncode == 0
    assert list(json.loads(records_file(environment(tmp_path)).read_text())["projects"]) == [str(root)]
    assert listed(run(tmp_path, link / "src" / "deep", "mcp", "status"))
    missing = run(tmp_path, tmp_path, "mcp", "trust", str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "Traceback" not in missing.stderr


def test_project_files_are_not_looked_for_above_the_repository_root(tmp_path):
    (tmp_path / ".mcp.json").write_text(json.dumps(SERVER))
    inner = tmp_path / "inner"
    (inner / ".git").mkdir(parents=True)
    (inner / "a").mkdir()
    assert find_project(inner / "a") == inner / "a"  # no project file up to the repository root
    assert find_project(tmp_path / "inner") == inner
    plain = tmp_path / "plain" / "b"
    plain.mkdir(parents=True)
    assert find_project(plain) == tmp_path  # no repository: up to the filesystem root
    assert not listed(run(tmp_path, inner / "a", "mcp", "status", "--trust-project"))


def test_a_broken_records_file_is_kept_and_trusts_nothing(tmp_path):
    root, deep = project(tmp_path)
    records = records_file(environment(tmp_path))
    records.parent.mkdir(parents=True)
    records.write_text(json.dumps({"version": 1, "projects": {str(root): "not a record"}}))
    before = records.read_bytes()
    refused = run(tmp_path, deep, "mcp", "trust")
    assert refused.returncode == 1 and "is not a trusted-projects file hostlink wrote" in refused.stderr
    assert "nothing was recorded" in refused.stderr and records.read_bytes() == before
    decided = project_trust(deep, environment(tmp_path))
    assert (decided.trusted, decided.how) == (False, "unreadable")
    assert not listed(run(tmp_path, deep, "mcp", "status"))
    os.unlink(records)
    records.symlink_to(tmp_path / "elsewhere.json")
    (tmp_path / "elsewhere.json").write_text(json.dumps({"version": 1, "projects": {str(root): {"digest": "x"}}}))
    assert project_trust(deep, environment(tmp_path)).how == "unreadable"  # never read through a link


def test_the_decision_is_the_hosts(tmp_path):
    root, deep = project(tmp_path)
    env = environment(tmp_path)
    assert project_trust(deep, env).how == "none"
    assert project_trust(deep, env, flag=True).how == "flag"
    assert project_trust(deep, {**env, "HOSTLINK_TRUST_PROJECT": "yes"}).how == "environment"
    run(tmp_path, deep, "mcp", "trust")
    decided = project_trust(deep, env)
    assert (decided.trusted, decided.how, decided.project) == (True, "record", root)
    (root / ".mcp.json").write_text("{}")
    decided = project_trust(deep, env)
    assert (decided.trusted, decided.how) == (False, "changed")
    assert "changed since trusted" in decided.warning and str(root) in decided.warning
