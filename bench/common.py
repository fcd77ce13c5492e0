"""Measuring helpers: interleaved repetitions, medians and percentiles, and the table."""

from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class Row:
    """One comparison: `baseline` and `hostlink` in `unit`; `goal` is prose."""

    name: str
    baseline: float
    hostlink: float
    unit: str
    goal: str = ""

    @property
    def ratio(self) -> float:
        return self.hostlink / self.baseline if self.baseline else float("inf")


def interleaved(baseline: Callable[[], object], candidate: Callable[[], object],
                repeats: int) -> tuple[list[float], list[float]]:
    """Time both callables `repeats` times each, alternating which goes first."""
    base_times: list[float] = []
    cand_times: list[float] = []
    for index in range(repeats):
        pair = [(baseline, base_times), (candidate, cand_times)]
        if index % 2:
            pair.reverse()
        for function, sink in pair:
            sink.append(timed(function))
    return base_times, cand_times


def timed(function: Callable[[], object]) -> float:
    """Seconds one call of `function` takes."""
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


@contextmanager
def private_runtime() -> Iterator[str]:
    """A throwaway `HOSTLINK_RUNTIME_DIR` for the block; the previous value comes back after."""
    previous = os.environ.get("HOSTLINK_RUNTIME_DIR")
    with tempfile.TemporaryDirectory() as runtime:
        os.environ["HOSTLINK_RUNTIME_DIR"] = runtime
        try:
            yield runtime
        finally:
            if previous is None:
                del os.environ["HOSTLINK_RUNTIME_DIR"]
            else:
                os.environ["HOSTLINK_RUNTIME_DIR"] = previous


def run_command(argv: Sequence[str], env: dict[str, str] | None = None) -> None:
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)


def format_table(rows: Sequence[Row]) -> str:
    header = ("benchmark", "baseline", "hostlink", "ratio", "goal")
    body = [
        (row.name, f"{row.baseline:.4g} {row.unit}", f"{row.hostlink:.4g} {row.unit}", f"{row.ratio:.2f}x", row.goal)
        for row in rows
    ]
    widths = [max(len(line[column]) for line in [header, *body]) for column in range(len(header))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
             for line in [header, *body]]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)
