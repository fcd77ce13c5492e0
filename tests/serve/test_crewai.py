"""CrewAI through `hostlink serve`, the tested recipe for it (docs/hosts/litellm.md): CrewAI
1.15 cannot share an environment with hostlink (it requires `mcp<2`, `openai<3`), so a crew runs
in .venv-crewai/ (scripts/setup-test) and takes the server's OpenAI endpoint as its LLM. The
crew's agent has one tool; Claude proposes it, CrewAI runs it, the result reaches Claude."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from peers import requires_claude
from serve_support import KEY, TOOL_PREFIX, fa

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("fresh_script"), requires_claude]
ROOT = Path(__file__).resolve().parents[2]
CREWAI = ROOT / ".venv-crewai" / "bin" / "python"
# CrewAI's telemetry and trace upload stay off: only loopback is reached
QUIET = {"CREWAI_DISABLE_TELEMETRY": "true", "OTEL_SDK_DISABLED": "true", "CREWAI_TRACING_ENABLED": "false",
         "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


@pytest.mark.skipif(not CREWAI.exists() and not os.environ.get("CI"), reason="needs .venv-crewai (scripts/setup-test)")
def test_a_crew_runs_its_tool_and_answers_through_serve(server, api, tmp_path):
    api.push(fa.tool_use(TOOL_PREFIX + "get_weather", {"city": "Rome"}),
             fa.text("Sunny in Rome."))
    home = tmp_path / "home"
    home.mkdir()
    environ = {"PATH": os.environ["PATH"], "HOME": str(home), "HOSTLINK_BASE_URL": server.base_url,
               "HOSTLINK_KEY": KEY, **QUIET}
    run = subprocess.run([str(CREWAI), str(Path(__file__).parent / "crewai" / "crew.py")], env=environ, cwd=tmp_path,
                         capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-3000:]
    said = json.loads(run.stdout.strip().splitlines()[-1])
    assert said == {"answer": "Sunny in Rome.", "ran": ["Rome"]}
    first, second = api.messages_requests()[-2:]
    assert "What is the weather in Rome?" in json.dumps(first["messages"])
    assert "sunny-rome-4711" in json.dumps(second["messages"])  # CrewAI's run of the tool reached Claude
