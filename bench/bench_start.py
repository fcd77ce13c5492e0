"""Start costs: `hostlink --help` and `hostlink mcp status` against a bare Python start,
and `llm --help` with the hostlink plugin against `llm --help` with no plugins loaded."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

from bench.common import Row, interleaved, median, run_command


def run(quick: bool) -> list[Row]:
    repeats = 2 if quick else 15
    bin_dir = os.path.dirname(sys.executable)
    hostlink = os.path.join(bin_dir, "hostlink")
    llm = shutil.which("llm", path=bin_dir)
    bare = [sys.executable, "-c", "pass"]
    rows = []
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "HOME": home, "XDG_CONFIG_HOME": os.path.join(home, ".config"), "LLM_USER_PATH": home}
        for label, argv in (("hostlink --help", [hostlink, "--help"]), ("hostlink mcp status", [hostlink, "mcp", "status"])):
            base, ours = interleaved(lambda: run_command(bare, env), lambda: run_command(argv, env), repeats)
            rows.append(Row(f"{label} vs python -c pass", median(base) * 1000, median(ours) * 1000, "ms", "<= 250 ms"))
        if llm:
            without = {**env, "LLM_LOAD_PLUGINS": ""}
            base, ours = interleaved(
                lambda: run_command([llm, "--help"], without), lambda: run_command([llm, "--help"], env), repeats
            )
            rows.append(Row("llm --help with hostlink vs without plugins", median(base) * 1000, median(ours) * 1000, "ms", "<= 1.05x"))
    return rows
