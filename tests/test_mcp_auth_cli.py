"""``hostlink mcp auth`` / ``logout`` / ``status`` as a user runs them, against the fake OAuth server."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from mcp_auth_support import *  # noqa: F403 - fixtures
from mcp_auth_support import follow_link

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("keyring_required")]
HOSTLINK = [sys.executable, "-c", "from hostlink.cli import main; main()"]


@pytest.fixture
def configured(fake_oauth, tmp_path, monkeypatch):
    config = tmp_path / "config"
    (config / "hostlink").mkdir(parents=True)
    (config / "hostlink" / "mcp.json").write_text(json.dumps({"mcpServers": {
        "fake": {"url": fake_oauth.mcp, "auth": "oauth"},
        "tok": {"url": fake_oauth.mcp, "auth": "bearer", "bearerTokenEnv": "FAKE_TOKEN_UNSET"},
    }}))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    monkeypatch.delenv("FAKE_TOKEN_UNSET", raising=False)
    monkeypatch.chdir(tmp_path)
    return fake_oauth


def hostlink(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*HOSTLINK, *args], capture_output=True, text=True, timeout=120)


def credentials() -> dict:
    result = hostlink("mcp", "status", "--json")
    assert result.returncode == 0, result.stderr
    return {row["name"]: row["credentials"] for row in json.loads(result.stdout)}


async def test_auth_prints_a_link_waits_and_reports(configured):
    assert credentials() == {"fake": "signed out", "tok": "env missing: FAKE_TOKEN_UNSET"}
    proc = subprocess.Popen([*HOSTLINK, "mcp", "auth", "fake", "--timeout", "60"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().startswith("Open this link in your browser to sign in to fake")
        link = proc.stdout.readline().strip()
        assert link.startswith(configured.issuer + "/authorize?")
        assert (await follow_link(link)).status_code == 200
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert out.strip() == "fake: signed in"
    assert credentials()["fake"] == "signed in"
    result = hostlink("mcp", "call", "fake", "whoami")
    assert result.returncode == 0 and result.stdout.startswith("client client-"), result.stderr
    result = hostlink("mcp", "logout", "fake")
    assert result.returncode == 0 and "signed out" in result.stdout, result.stderr
    assert credentials()["fake"] == "signed out"


async def test_auth_times_out_and_refuses_non_link_servers(configured):
    result = hostlink("mcp", "auth", "fake", "--timeout", "1")
    assert result.returncode == 1
    assert "still waiting for the browser" in result.stderr
    result = hostlink("mcp", "auth", "tok")
    assert result.returncode == 1 and "FAKE_TOKEN_UNSET" in result.stderr
    result = hostlink("mcp", "auth", "nope")
    assert result.returncode == 1 and "unknown MCP server" in result.stderr


async def test_a_tool_call_without_sign_in_returns_the_link(configured):
    result = hostlink("mcp", "call", "fake", "whoami")
    assert result.returncode == 1
    assert configured.issuer + "/authorize?" in result.stdout + result.stderr
    assert configured.counters()["token_code"] == 0
