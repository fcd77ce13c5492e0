"""The OAuth client scenarios of @modelcontextprotocol/conformance against hostlink's client.

Each scenario runs on its own, one after another (in parallel the Python start trips the
harness timeouts), in a loopback-only network namespace (the harness binds every
interface), with the harness following nothing itself: tests/fakes/conformance_client.py
opens the authorization link as a browser would. Known failures, with reasons, are in
tests/conformance/auth-baseline.yml; the harness fails a run when a baseline entry passes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mcp_auth_support import FAKES
from peers import CONFORMANCE as HARNESS
from peers import conformance_node

BASELINE = Path(__file__).parents[1] / "conformance" / "auth-baseline.yml"
AUTH_SCENARIOS = [
    "auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3",
    "auth/basic-cimd", "auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined", "auth/scope-step-up", "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post", "auth/token-endpoint-auth-none",
    "auth/pre-registration", "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback", "auth/resource-mismatch", "auth/offline-access-scope",
    "auth/offline-access-not-supported", "auth/client-credentials-jwt", "auth/client-credentials-basic",
    "auth/cross-app-access-complete-flow",
]

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("keyring_required", "no_browser", "isolated_state")]


@pytest.fixture
def harness():
    return conformance_node()


def test_the_scenario_list_is_the_harness_list(harness):
    listed = subprocess.run([harness, str(HARNESS), "list"], capture_output=True, text=True, timeout=60).stdout
    names = [line.strip().removeprefix("- ").split(" ")[0] for line in listed.splitlines()]
    assert sorted(n for n in names if n.startswith("auth/")) == sorted(AUTH_SCENARIOS)


@pytest.mark.parametrize("scenario", AUTH_SCENARIOS)
def test_auth_scenario(harness, scenario, tmp_path):
    client = f"{sys.executable} {FAKES / 'conformance_client.py'}"
    run = (f"ip link set lo up && exec '{harness}' '{HARNESS}' client --command '{client}' "
           f"--scenario '{scenario}' --expected-failures '{BASELINE}'")
    # --map-root-user: a new network namespace without needing root (a user namespace)
    result = subprocess.run(["unshare", "--map-root-user", "--net", "sh", "-c", run], cwd=tmp_path,
                            capture_output=True, text=True, timeout=180)
    summary = [line for line in result.stdout.splitlines() if "Passed:" in line or "OVERALL" in line]
    assert result.returncode == 0, "\n".join([*summary, result.stdout[-3000:], result.stderr[-2000:]])
