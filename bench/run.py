"""Run the benchmarks and print one table: `python -m bench.run [--quick] [--json FILE] [NAME ...]`.

`--quick` is the CI smoke: tiny sizes and one repetition, so a benchmark cannot rot; its
numbers mean nothing. `--json FILE` also writes the table (machine, commit, rows) for
tracking runs over time. Benchmarks never fail on a number.
"""

from __future__ import annotations

import argparse
import compileall
import dataclasses
import importlib
import json
import os
import platform
import subprocess
from pathlib import Path

from bench.common import format_table

BENCHMARKS = {
    "output": "bench.bench_output",
    "start": "bench.bench_start",
    "mcp": "bench.bench_mcp",
    "provider": "bench.bench_provider",
    "llm": "bench.bench_llm",
    "serve": "bench.bench_serve",
    "gateway": "bench.bench_gateway",
    "serve-clients": "bench.bench_serve_clients",
    "loop": "bench.bench_loop",
    "tasks": "bench.bench_tasks",
    "telemetry": "bench.bench_telemetry",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smoke run: tiny sizes, one repetition")
    parser.add_argument("--json", metavar="FILE", type=Path, help="also write the table as JSON to FILE")
    parser.add_argument("names", nargs="*", help=f"benchmarks to run (default: all of {', '.join(BENCHMARKS)})")
    args = parser.parse_args()
    unknown = sorted(set(args.names) - set(BENCHMARKS))
    if unknown:
        parser.error(f"unknown benchmark: {', '.join(unknown)}")
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    print(f"machine: {machine}")
    _compile_hostlink()
    rows = []
    for name in args.names or BENCHMARKS:
        rows.extend(importlib.import_module(BENCHMARKS[name]).run(quick=args.quick))
    print(format_table(rows))
    if args.json is not None:
        table = {"machine": machine, "commit": _commit(), "quick": args.quick,
                 "rows": [{**dataclasses.asdict(row), "ratio": row.ratio} for row in rows]}
        args.json.write_text(json.dumps(table, indent=2) + "\n")


def _compile_hostlink() -> None:
    """Bytecode for every hostlink module, as an installed package has it: with
    PYTHONDONTWRITEBYTECODE set (some machines set it) or a cache older than an edit, every
    process a start row times would compile hostlink from source first."""
    import hostlink

    compileall.compile_dir(os.path.dirname(hostlink.__file__), quiet=1)


def _commit() -> str | None:
    """The checkout's commit, with `-dirty` when it has changes; None outside git."""
    try:
        described = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=12"], capture_output=True,
                                   text=True, timeout=10, cwd=Path(__file__).parent)
    except OSError:
        return None
    return described.stdout.strip() or None


if __name__ == "__main__":
    main()
