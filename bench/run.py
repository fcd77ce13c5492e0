"""Run the benchmarks and print one table: ``python -m bench.run [--quick] [NAME ...]``.

``--quick`` is the CI smoke: tiny sizes and one repetition, so a benchmark cannot rot; its
numbers mean nothing. Benchmarks never fail on a number.
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform

from bench.common import format_table

BENCHMARKS = {
    "output": "bench.bench_output",
    "start": "bench.bench_start",
    "mcp": "bench.bench_mcp",
    "provider": "bench.bench_provider",
    "llm": "bench.bench_llm",
    "serve": "bench.bench_serve",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smoke run: tiny sizes, one repetition")
    parser.add_argument("names", nargs="*", help=f"benchmarks to run (default: all of {', '.join(BENCHMARKS)})")
    args = parser.parse_args()
    unknown = sorted(set(args.names) - set(BENCHMARKS))
    if unknown:
        parser.error(f"unknown benchmark: {', '.join(unknown)}")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    rows = []
    for name in args.names or BENCHMARKS:
        rows.extend(importlib.import_module(BENCHMARKS[name]).run(quick=args.quick))
    print(format_table(rows))


if __name__ == "__main__":
    main()
