"""An opt-in pytest plugin: the CPU each test costs, in its own process and in the children it
reaped, for the per-file figures of where the suite's time goes.

`HOSTLINK_TEST_CPU_LOG=/path/log.jsonl scripts/test -p cpu_census ...` appends one JSON line per
test: its id, the CPU seconds (user + system) of the test's process while it ran (`self`), and
those of the processes it and its children waited for meanwhile (`children`, getrusage's
RUSAGE_CHILDREN: a module-scoped server counts in the test after which it is stopped).

`python tests/cpu_census.py LOG [LOG ...]` prints the files that cost most, one column per log
(e.g. before and after a change).
"""

import json
import os
import resource
import sys
from collections import Counter
from pathlib import Path

import pytest

_LOG = os.environ.get("HOSTLINK_TEST_CPU_LOG", "")


def _cpu() -> tuple[float, float]:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if not _LOG:
        yield
        return
    before = _cpu()
    yield
    after = _cpu()
    line = json.dumps({"test": item.nodeid, "self": after[0] - before[0], "children": after[1] - before[1]})
    with open(_LOG, "a", encoding="utf-8") as log:
        log.write(line + "\n")


def per_file(log: Path) -> Counter[str]:
    """CPU seconds (self + children) per test file of LOG."""
    seconds: Counter[str] = Counter()
    for line in log.read_text().splitlines():
        test = json.loads(line)
        seconds[test["test"].split("::")[0]] += test["self"] + test["children"]
    return seconds


if __name__ == "__main__":
    columns = [per_file(Path(name)) for name in sys.argv[1:]]
    print("".join(f"{Path(name).stem:>16}" for name in sys.argv[1:]) + "  file")
    print("".join(f"{sum(column.values()):>15.0f}s" for column in columns) + "  all")
    for path, _ in columns[0].most_common(40):
        print("".join(f"{column[path]:>15.1f}s" for column in columns) + f"  {path}")
