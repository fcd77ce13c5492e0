"""The MCP conformance suite's server scenarios, every one (`--suite all`), in one run of the
harness each, inside a loopback-only network namespace (`unshare -n`: the harness's own servers
bind every interface): straight against the suite's fixture server (`tests/fakes/
conformance_server.py`), which passes them all (`tests/conformance/fixture-baseline.yml`: one
scenario's two warnings), and against `hostlink mcp serve --http
--expose tools` with that fixture behind it, whose failures must match
`tests/conformance/gateway-baseline.yml` exactly (the harness also fails a run when a baseline
entry passes).

The harness sends no headers and calls the fixture's own names, which it never lists, so in
front of the gateway a small proxy (`tests/fakes/bearer_proxy.py`) adds the gateway's key and
plays a host that calls the names the tools face gives them (`fixture__test_image_content`,
`hostlink://fixture/test://static-text`)."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest

from gateway_support import HOSTLINK, ROOT, gateway_env, leftovers
from peers import CONFORMANCE, conformance_node

pytestmark = pytest.mark.slow
BASELINE = ROOT / "tests" / "conformance" / "gateway-baseline.yml"
FIXTURE_BASELINE = ROOT / "tests" / "conformance" / "fixture-baseline.yml"
PROXY = ROOT / "tests" / "fakes" / "bearer_proxy.py"
SERVER = ROOT / "tests" / "fakes" / "conformance_server.py"
KEY = "conformance-key-0123456789"
# The fixture may ask the MCP host: its questions and model requests go to the harness.
FIXTURE_ENTRY = {"command": sys.executable, "args": [str(SERVER)], "elicitation": True,
                 "sampling": {"model": "claude-code/haiku", "maxTokens": 100}}


def harness(node: str) -> str:
    """Every server scenario, one after another, against the endpoint on port 3001."""
    return f"{shlex.quote(node)} {shlex.quote(str(CONFORMANCE))} server --suite all --url http://localhost:3001/mcp"


def test_the_fixture_passes_every_server_scenario_straight(tmp_path):
    node = conformance_node()
    q = shlex.quote
    script = f"""
ip link set lo up
{q(sys.executable)} {q(str(SERVER))} --http 3001 > server.out 2>&1 &
SERVER=$!
for i in $(seq 100); do grep -q listening server.out && break; sleep 0.1; done
{harness(node)} --expected-failures {q(str(FIXTURE_BASELINE))}
STATUS=$?
kill $SERVER; wait $SERVER
exit $STATUS
"""
    result = subprocess.run(["unshare", "-n", "sh", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                            timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == 0 and "Baseline check passed" in output, output[-4000:]
    assert "Total: 44 passed, 0 failed" in output, output[-3000:]
    assert "✓ dns-rebinding-protection: 2 passed" in output  # the SDK's Host/Origin checks for loopback
    assert "Traceback" not in (tmp_path / "server.out").read_text()


def test_server_scenarios_through_the_tools_face(tmp_path):
    node = conformance_node()
    environ = gateway_env(tmp_path, {"fixture": FIXTURE_ENTRY})
    environ["PROXY_KEY"] = KEY
    q = shlex.quote
    script = f"""
ip link set lo up
{q(HOSTLINK)} mcp serve --http --port 3002 --expose tools --token-env PROXY_KEY > gateway.out 2> gateway.err &
GATEWAY=$!
{q(sys.executable)} {q(str(PROXY))} 3001 3002 fixture > proxy.out &
PROXY=$!
for i in $(seq 100); do grep -q MCP gateway.out && grep -q ready proxy.out && break; sleep 0.1; done
{harness(node)} --expected-failures {q(str(BASELINE))}
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
    assert "Baseline check passed" in output and "Total: 43 passed, 1 failed" in output, output[-3000:]
    # Passes that mean something: the renamed calls reached the fixture and its answers came back.
    for scenario in ("tools-call-image", "tools-call-sampling", "tools-call-elicitation", "resources-read-binary",
                     "resources-subscribe", "prompts-get-with-image", "json-schema-2020-12", "tools-call-with-logging",
                     "elicitation-sep1330-enums", "prompts-get-embedded-resource"):
        assert f"✓ {scenario}:" in output, scenario
    assert "gateway exit 143" in output, (tmp_path / "gateway.err").read_text()[-2000:]
    assert "Traceback" not in (tmp_path / "gateway.err").read_text()
    assert leftovers(tmp_path) == []
