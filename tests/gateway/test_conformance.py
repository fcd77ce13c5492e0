"""The MCP conformance suite's server scenarios against `hostlink mcp serve --http --expose
tools` with `@modelcontextprotocol/server-everything` behind it, in one run of the harness,
inside a loopback-only network namespace (`unshare -n`: the harness's own servers bind every
interface). Failures must match `tests/conformance/gateway-baseline.yml` exactly (the harness
also fails a run when a baseline entry passes). The harness sends no headers, so a small proxy
(`tests/fakes/bearer_proxy.py`) adds the gateway's key."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest

from gateway_support import EVERYTHING, HOSTLINK, NODE, ROOT, gateway_env, leftovers
from peers import CONFORMANCE, conformance_node

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not (EVERYTHING.is_file() and NODE), reason="no server-everything")]
BASELINE = ROOT / "tests" / "conformance" / "gateway-baseline.yml"
PROXY = ROOT / "tests" / "fakes" / "bearer_proxy.py"
KEY = "conformance-key-0123456789"


def test_server_scenarios_against_the_tools_face(tmp_path):
    node = conformance_node()
    environ = gateway_env(tmp_path, {"everything": {"command": NODE, "args": [str(EVERYTHING), "stdio"]}})
    environ["PROXY_KEY"] = KEY
    q = shlex.quote
    script = f"""
ip link set lo up
{q(HOSTLINK)} mcp serve --http --port 3002 --expose tools --token-env PROXY_KEY > gateway.out 2> gateway.err &
GATEWAY=$!
{q(sys.executable)} {q(str(PROXY))} 3001 3002 > proxy.out &
PROXY=$!
for i in $(seq 100); do grep -q MCP gateway.out && grep -q ready proxy.out && break; sleep 0.1; done
{q(node)} {q(str(CONFORMANCE))} server --url http://localhost:3001/mcp --expected-failures {q(str(BASELINE))}
STATUS=$?
kill $PROXY
kill -TERM $GATEWAY; wait $GATEWAY
echo "gateway exit $?"
exit $STATUS
"""
    result = subprocess.run(["unshare", "-n", "sh", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                            env=environ, timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert "Baseline check passed" in output and "Total: 11 passed, 21 failed" in output, output[-3000:]
    assert "gateway exit 143" in output, (tmp_path / "gateway.err").read_text()[-2000:]
    assert "Traceback" not in (tmp_path / "gateway.err").read_text()
    assert leftovers(tmp_path) == []


# Failures server-everything does not have: it accepts a subscription to any URI, the gateway refuses
# the harness's test://watched-resource (it names no server behind the gateway).
GATEWAY_ONLY = ("resources-subscribe", "resources-unsubscribe")


def test_the_baseline_is_what_server_everything_fails_on_its_own(tmp_path):
    """The same scenarios straight against server-everything: its failures are exactly the
    baseline less the two the baseline gives the gateway alone (a stale entry fails the run)."""
    node = conformance_node()
    straight = tmp_path / "straight-baseline.yml"
    straight.write_text("".join(line for line in BASELINE.read_text().splitlines(keepends=True)
                                if line.strip().removeprefix("- ") not in GATEWAY_ONLY))
    q = shlex.quote
    script = f"""
ip link set lo up
PORT=3001 {q(NODE)} {q(str(EVERYTHING))} streamableHttp > everything.out 2>&1 &
SERVER=$!
for i in $(seq 100); do grep -q listening everything.out && break; sleep 0.1; done
{q(node)} {q(str(CONFORMANCE))} server --url http://localhost:3001/mcp --expected-failures {q(str(straight))}
STATUS=$?
kill $SERVER; wait $SERVER
exit $STATUS
"""
    result = subprocess.run(["unshare", "-n", "sh", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                            timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == 0 and "Baseline check passed" in output, output[-4000:]
