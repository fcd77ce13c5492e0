"""Output bounding: a 50 MiB text result and an 8 MiB escape-laden one through
`hostlink.host.output.bound_text`, against one plain pass over the same text (encode it in
chunks and write it to a file, the least any overflow file costs); and the peak RSS of each,
in fresh processes, against the input size."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

from bench.common import Row, interleaved, median, private_runtime

_MIB = 1024 * 1024

_WORKER = r"""
import json, os, sys
kind, size, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
sys.path.insert(0, os.getcwd())
from bench.bench_output import make_text, plain_pass
from hostlink.host.output import OutputSession, bound_text
def high_water_kib():  # VmHWM belongs to this exec'd image; ru_maxrss would include the parent's
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
text = make_text(kind, size)
before = high_water_kib()
if mode == "plain":
    plain_pass(text)
else:
    session = OutputSession()
    bound_text(text, session)
    session.close()
print(json.dumps({"before_kib": before, "after_kib": high_water_kib()}))
"""


def make_text(kind: str, size: int) -> str:
    if kind == "plain":
        line = "the quick brown fox jumps over the lazy dog 0123456789\n"
    else:
        line = "\x1b[1;31merror\x1b[0m: \x1b]8;;https://example.invalid\x07link\x1b]8;;\x07 \x07bell\r\n"
    return line * (size // len(line))


def plain_pass(text: str) -> None:
    chunk = 1 << 20
    with tempfile.TemporaryFile() as handle:
        for start in range(0, len(text), chunk):
            handle.write(text[start : start + chunk].encode("utf-8"))


def _peak_rss_mib(kind: str, size: int, mode: str) -> float:
    """Peak RSS of a fresh process that builds the text and runs one pass over it."""
    result = subprocess.run(
        [sys.executable, "-c", _WORKER, kind, str(size), mode],
        capture_output=True, text=True, check=True, timeout=300,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    )
    return json.loads(result.stdout)["after_kib"] / 1024


def _time_rows(kind: str, size: int, repeats: int) -> list[Row]:
    from hostlink.host.output import OutputSession, bound_text

    text = make_text(kind, size)

    def bounded() -> None:
        session = OutputSession()
        bound_text(text, session)
        session.close()

    base, ours = interleaved(lambda: plain_pass(text), bounded, repeats)
    return [Row(f"bound {size // _MIB} MiB {kind} text", median(base) * 1000, median(ours) * 1000, "ms", "<= 1.5x")]


def run(quick: bool) -> list[Row]:
    repeats = 1 if quick else 5
    cases = [("plain", 2 * _MIB), ("escapes", 1 * _MIB)] if quick else [("plain", 50 * _MIB), ("escapes", 8 * _MIB)]
    rows = []
    with private_runtime():
        for kind, size in cases:
            rows.extend(_time_rows(kind, size, repeats))
            rows.append(Row(f"peak RSS, {size // _MIB} MiB {kind} text", _peak_rss_mib(kind, size, "plain"),
                            _peak_rss_mib(kind, size, "bound"), "MiB", "<= 2x input"))
    return rows
