"""The non-OAuth client scenarios of @modelcontextprotocol/conformance against hostlink's runtime.

The harness runs tests/fakes/conformance_client.py (McpRuntime over Streamable HTTP: list the
tools, call each), one scenario at a time, in a loopback-only network namespace (the harness
binds every interface). Deliberate gaps are in tests/conformance/runtime-baseline.yml; the
harness also fails a run when a baseline entry unexpectedly passes.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from peers import CONFORMANCE as HARNESS
from peers import ROOT, conformance_node

CLIENT = ROOT / "tests" / "fakes" / "conformance_client.py"
BASELINE = ROOT / "tests" / "conformance" / "runtime-baseline.yml"
SCENARIOS = ["initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry"]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def node() -> str:
    return conformance_node()


def test_every_non_oauth_client_scenario_is_covered(node):
    listed = subprocess.run([node, str(HARNESS), "list"], capture_output=True, text=True, timeout=60).stdout
    client_part = listed.split("Client scenarios", 1)[1]
    names = [line.strip().removeprefix("- ").split(" ")[0] for line in client_part.splitlines()
             if line.strip().startswith("- ")]
    assert sorted(name for name in names if not name.startswith("auth/")) == sorted(SCENARIOS)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_client_scenario(node, scenario, tmp_path):
    command = f"{sys.executable} {CLIENT}"
    run = (f"ip link set lo up && exec '{node}' '{HARNESS}' client --command '{command}' "
           f"--scenario '{scenario}' --expected-failures '{BASELINE}'")
    env = {**os.environ, "HOSTLINK_RUNTIME_DIR": str(tmp_path / "runtime")}
    result = subprocess.run(["unshare", "-n", "sh", "-c", run], cwd=tmp_path, capture_output=True, text=True,
                            env=env, timeout=180)
    summary = [line for line in result.stdout.splitlines() if "Passed:" in line or "OVERALL" in line]
    assert result.returncode == 0, "\n".join([*summary, result.stdout[-3000:], result.stderr[-2000:]])
