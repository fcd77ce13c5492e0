"""The benchmarks' CI smoke: `python -m bench.run --quick` prints a full table.

It checks the shape only (a row for each benchmark, a number in every cell, a ratio in
every row), never how big a number is: benchmarks do not fail on speed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NODE_BIN = ROOT / "node_modules" / ".bin"

# A row name each benchmark always prints, and those it prints when its npm peers are there.
ALWAYS = {
    "output": ["bound ", "peak RSS, "],
    "start": ["hostlink --help vs", "hostlink mcp status vs", "llm --help with hostlink",
              "import hostlink.adapters.langchain vs langchain_core's", "import hostlink.adapters.litellm vs litellm's",
              "first mcp call (connect), demo"],
    "mcp": ["mcp call p50, demo echo", "mcp call p95, demo echo", "mcp 10 concurrent calls, demo"],
    "provider": ["proposal server start", "transcript, 10 messages", "transcript, 100 messages"],
    "gateway": ["tools/list bytes, ", "gateway call p50, demo echo (tools face)",
                "gateway call p50, demo echo (proxy face)"],
    "serve-clients": ["serve Responses wire vs Chat Completions wire"],
    "tasks": ["mcp call run as a task, crunch 0 s (FastMCP)"],  # .venv-tasks: scripts/setup-test installs it
    "telemetry": ["no-SDK spans+metrics of an mcp call vs mcp call p50, demo echo"],
}
WITH_PEERS = {
    ("mcp-server-everything",): ["first mcp call (connect), everything", "mcp call p50, everything echo",
                                 "mcp 10 concurrent calls, everything"],
    ("claude",): ["provider request vs bare claude -p",
                  "no-SDK spans+metrics of a provider request vs provider request",
                  "follow-up request after a tool call (prewarmed) vs bare",
                  "follow-up request asked at once (prewarmed) vs bare", "serve request p50 vs in-process",
                  "serve 2 concurrent vs one at a time", "serve 2 concurrent vs 2 concurrent in-process",
                  "serve Responses request p50 vs", "serve 2-round client tool loop vs",
                  "1-round tool loop, 0.3 s tools: pydantic-ai agent vs 2 bare",
                  "1-round tool loop, 0.3 s tools: llm chain vs 2 bare",
                  "1-round tool loop, 0.3 s tools: serve client vs 2 bare",
                  "1-round tool loop, 0.3 s tools: LangChain model vs 2 bare",
                  "1-round tool loop, 0.3 s tools: LiteLLM completion vs 2 bare"],
    ("claude", "mcp-server-everything"): ["llm -T mcp tool round trip vs 2 bare",
                                          "llm -T mcp tool round trip vs its unavoidable"],
}
CELL = re.compile(r"^-?\d+(\.\d+)?(e[+-]?\d+)? \S+$")
RATIO = re.compile(r"^\d+(\.\d+)?x$")


def _table(stdout: str) -> list[list[str]]:
    """The table's body rows, split on the runs of spaces between columns."""
    lines = stdout.splitlines()
    assert lines[0].startswith("machine: ") and " cores, Python " in lines[0]
    assert re.split(r"\s{2,}", lines[1].strip()) == ["benchmark", "baseline", "hostlink", "ratio", "goal"]
    assert set(lines[2].replace(" ", "")) == {"-"}
    return [re.split(r"\s{2,}", line.strip()) for line in lines[3:] if line.strip()]


def test_quick_run_prints_a_row_per_benchmark_with_numeric_ratios(tmp_path):
    missing = sorted({peer for peers in WITH_PEERS for peer in peers if not (NODE_BIN / peer).exists()})
    if missing and os.environ.get("CI"):
        pytest.fail(f"npm peers missing in CI: {', '.join(missing)} (run scripts/setup-test)")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    result = subprocess.run([sys.executable, "-m", "bench.run", "--quick"], cwd=ROOT, capture_output=True,
                            text=True, timeout=600, env={**os.environ, "TMPDIR": str(scratch)})
    assert result.returncode == 0, result.stderr[-3000:]
    assert not list(scratch.iterdir()), "the benchmarks left temporary files behind"
    rows = _table(result.stdout)
    names = [row[0] for row in rows]
    expected = [prefix for prefixes in ALWAYS.values() for prefix in prefixes]
    expected += [prefix for peers, prefixes in WITH_PEERS.items() if not set(peers) & set(missing)
                 for prefix in prefixes]
    for prefix in expected:
        assert any(name.startswith(prefix) for name in names), f"no row starting {prefix!r} in:\n{result.stdout}"
    for row in rows:
        assert len(row) == 5, row
        _, baseline, hostlink, ratio, goal = row
        assert CELL.match(baseline) and CELL.match(hostlink), row
        assert RATIO.match(ratio), row
        assert goal, row


def test_unknown_benchmark_name_is_refused():
    result = subprocess.run([sys.executable, "-m", "bench.run", "--quick", "nosuch"], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "unknown benchmark: nosuch" in result.stderr


def test_json_writes_machine_commit_and_every_row(tmp_path):
    target = tmp_path / "bench.json"
    result = subprocess.run([sys.executable, "-m", "bench.run", "--quick", "--json", str(target), "output"], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    table = json.loads(target.read_text())
    assert " cores, Python " in table["machine"] and table["quick"] is True
    assert table["commit"] and re.fullmatch(r"[0-9a-f]{12}(-dirty)?", table["commit"])
    printed = [row[0] for row in _table(result.stdout)]
    assert [row["name"] for row in table["rows"]] == printed
    for row in table["rows"]:
        assert set(row) == {"name", "baseline", "hostlink", "unit", "goal", "ratio"}
        assert row["ratio"] == row["hostlink"] / row["baseline"]
