"""Running the real `llm` CLI in a subprocess with throwaway HOME, XDG and llm dirs.

Also finds what a run left behind: processes that still carry the run's private paths (in
their command line or environment: every child inherits HOME) and files in its hostlink
runtime root.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

LLM = [str(Path(sys.executable).with_name("llm"))]  # the console script users run
DEMO_CONFIG = {"mcpServers": {"demo": {"command": sys.executable, "args": ["-m", "hostlink.demo"]}}}


@dataclass(frozen=True)
class LlmDirs:
    root: Path

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def config(self) -> Path:
        return self.root / "config"

    @property
    def runtime(self) -> Path:
        return self.root / "runtime"

    @property
    def project(self) -> Path:
        return self.root / "project"

    def create(self, mcp_config: dict | None = DEMO_CONFIG) -> LlmDirs:
        for path in (self.home, self.config, self.runtime, self.project, self.root / "llm", self.root / "data"):
            path.mkdir(parents=True, exist_ok=True)
        if mcp_config is not None:
            (self.config / "hostlink").mkdir(exist_ok=True)
            (self.config / "hostlink" / "mcp.json").write_text(json.dumps(mcp_config))
        return self

    def env(self, path: str | None = None, **extra: str) -> dict[str, str]:
        env = {
            "PATH": path if path is not None else os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.config),
            "XDG_DATA_HOME": str(self.root / "data"),
            "XDG_CACHE_HOME": str(self.root / "cache"),
            "LLM_USER_PATH": str(self.root / "llm"),
            "HOSTLINK_RUNTIME_DIR": str(self.runtime),
            "LANG": "C.UTF-8",
        }
        if "COVERAGE_PROCESS_CONFIG" in os.environ:  # scripts/check: llm and its children are measured too
            env["COVERAGE_PROCESS_CONFIG"] = os.environ["COVERAGE_PROCESS_CONFIG"]
        env.update(extra)
        return env


def run_llm(dirs: LlmDirs, *args: str, path: str | None = None, command: list[str] | None = None,
            timeout: float = 120, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*(command or LLM), *args],
        cwd=dirs.project,
        env=dirs.env(path, **extra),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def leftover_processes(marker: str) -> list[str]:
    """Command lines of live processes whose command line or environment mentions `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state == "Z":
            continue
        if marker.encode() in cmdline or marker.encode() in environ:
            found.append(cmdline.replace(b"\0", b" ").decode(errors="replace"))
    return found


def leftover_files(root: Path) -> list[str]:
    return sorted(str(path.relative_to(root)) for path in root.rglob("*")) if root.exists() else []
