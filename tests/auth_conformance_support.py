"""Running one OAuth client scenario of @modelcontextprotocol/conformance against hostlink's client.

The scenarios are in three modules by what they exercise (discovery, scopes, client
identity), so that pytest-xdist runs the groups on different workers. Each scenario runs in
a loopback-only network namespace (the harness binds every interface), with the harness
following nothing itself: tests/fakes/conformance_client.py opens the authorization link as a
browser would. Known failures, with reasons, are in tests/conformance/auth-baseline.yml; the
harness fails a run when a baseline entry passes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from mcp_auth_support import FAKES, keyring_daemon_running
from peers import CONFORMANCE as HARNESS

BASELINE = Path(__file__).parent / "conformance" / "auth-baseline.yml"
DISCOVERY = [
    "auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3",
    "auth/2025-03-26-oauth-metadata-backcompat", "auth/2025-03-26-oauth-endpoint-fallback", "auth/resource-mismatch",
]
SCOPES = [
    "auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported", "auth/scope-omitted-when-undefined",
    "auth/scope-step-up", "auth/scope-retry-limit", "auth/offline-access-scope", "auth/offline-access-not-supported",
]
CLIENT_IDENTITY = [
    "auth/basic-cimd", "auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none", "auth/pre-registration", "auth/client-credentials-jwt",
    "auth/client-credentials-basic", "auth/cross-app-access-complete-flow",
]


def listed_scenarios(harness: str) -> list[str]:
    """The auth scenarios the harness itself lists."""
    listed = subprocess.run([harness, str(HARNESS), "list"], capture_output=True, text=True, timeout=60).stdout
    names = [line.strip().removeprefix("- ").split(" ")[0] for line in listed.splitlines()]
    return sorted(name for name in names if name.startswith("auth/"))


def run_scenario(harness: str, scenario: str, cwd: Path) -> None:
    """Run one scenario with hostlink's client; fails with the harness's summary and output."""
    client = f"{sys.executable} {FAKES / 'conformance_client.py'}"
    run = (f"ip link set lo up && exec '{harness}' '{HARNESS}' client --command '{client}' "
           f"--scenario '{scenario}' --expected-failures '{BASELINE}'")
    # --map-root-user: a new network namespace without needing root (a user namespace)
    result = subprocess.run(["unshare", "--map-root-user", "--net", "sh", "-c", run], cwd=cwd,
                            capture_output=True, text=True, timeout=180)
    summary = [line for line in result.stdout.splitlines() if "Passed:" in line or "OVERALL" in line]
    # The shared keyring daemon aborting mid-scenario (a gnome-keyring assertion seen under the
    # parallel suite) fails the client's sign-in: said so, the failure is rerun once (conftest.py).
    daemon_gone = result.returncode != 0 and not keyring_daemon_running()
    cause = ["the OS keyring's daemon ended during the scenario"] if daemon_gone else []
    assert result.returncode == 0, "\n".join([*cause, *summary, result.stdout[-3000:], result.stderr[-2000:]])
