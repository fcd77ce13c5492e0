"""`hostlink mcp auth` / `logout` / `status` as a user runs them, against the fake OAuth server."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from mcp_auth_support import follow_link
from process_support import started

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("keyring_required", "no_browser", "isolated_state")]
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


@pytest.mark.serial  # the revocation answers within its 5 s bound
async def test_auth_prints_a_link_waits_and_reports(configured):
    assert credentials() == {"fake": "signed out", "tok": "env missing: FAKE_TOKEN_UNSET"}
    with started([*HOSTLINK, "mcp", "auth", "fake", "--timeout", "60"], stdout=subprocess.PIPE,
                 stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stdout.readline().startswith("Open this link in your browser to sign in to fake")
        link = proc.stdout.readline().strip()
        assert link.startswith(configured.issuer + "/authorize?")
        assert (await follow_link(link)).status_code == 200
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out.strip() == "fake: signed in"
    assert credentials()["fake"] == "signed in"
    result = hostlink("mcp", "call", "fake", "whoami")
    assert result.returncode == 0 and result.stdout.startswith("client client-"), result.stderr
    result = hostlink("mcp", "logout", "fake")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ("fake: signed out (the keyring confirmed the record is gone); "
                                     "the authorization server revoked its tokens")
    assert configured.counters()["revoked"] == ["refresh_token", "access_token"]
    assert credentials()["fake"] == "signed out"
    result = hostlink("mcp", "call", "fake", "whoami")
    assert result.returncode == 4  # signed out here, and the tokens are dead there


async def test_auth_times_out_and_refuses_non_link_servers(configured):
    result = hostlink("mcp", "auth", "fake", "--timeout", "1")
    assert result.returncode == 4  # authentication needed
    assert "still waiting for the browser" in result.stderr
    result = hostlink("mcp", "auth", "tok")
    assert result.returncode == 4 and "FAKE_TOKEN_UNSET" in result.stderr
    result = hostlink("mcp", "auth", "nope")
    assert result.returncode == 2 and "unknown MCP server" in result.stderr


async def test_a_one_shot_command_without_sign_in_names_the_command_not_a_dead_link(configured):
    # The callback listener would die with the command: a link there could never work.
    result = hostlink("mcp", "call", "fake", "whoami")
    assert result.returncode == 4
    assert result.stderr.strip() == "MCP server 'fake' needs sign-in: run `hostlink mcp auth fake`"
    assert "/authorize?" not in result.stdout + result.stderr
    assert configured.counters()["register"] == 0 and configured.counters()["token_code"] == 0
    assert credentials()["fake"] == "signed out"


@pytest.mark.parametrize("stop", ["timeout", "sigterm"])
async def test_no_pending_state_is_shown_for_a_sign_in_nobody_waits_for(configured, stop):
    if stop == "timeout":
        assert hostlink("mcp", "auth", "fake", "--timeout", "1").returncode == 4
    else:
        proc = subprocess.Popen([*HOSTLINK, "mcp", "auth", "fake"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        assert proc.stdout.readline().startswith("Open this link")
        assert credentials()["fake"] == "pending link"  # its listener is alive and waiting
        proc.terminate()
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 128 + 15 and "stopped by SIGTERM" in err
    assert credentials()["fake"] == "signed out"
