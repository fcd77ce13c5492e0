"""The Windows lane's subset of the suite (scripts/test-windows runs it under the Windows build of
CPython in Wine; the Linux suite runs what is not Windows-only).

Under Wine, pytest starts with `--confcutdir=tests/windows`: the Linux suite's tests/conftest.py
(a child subreaper, a private Secret Service) stays out, so what a test here needs is here or in a
stdlib-only helper. Every test stops the processes it starts.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "fakes"))
import fake_anthropic

from rerun_support import rerun_once_on

# litellm fetches a price list from the internet at import otherwise (the import checks, the
# LiteLLM host's round), retrying for seconds in the offline lane: only loopback is reached.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def pytest_collection_modifyitems(config, items):
    """A test runs once more when Wine failed to start one of its processes: `[WinError 1359]
    Internal error` is what Wine's NtCreateUserProcess returns when the new process ended before it
    reported its start (it failed a test that starts Python once, on a loaded CI machine). Nothing
    hostlink does gives that error; the lane's summary names the rerun. Only on Windows: the Linux
    suite collects this folder too, and this hook sees all its tests (the keyring tests' own mark
    must stay the one they carry). Where pytest-rerunfailures is not installed (the GitHub
    workflow's real Windows), a test runs once."""
    if sys.platform == "win32" and config.pluginmanager.hasplugin("rerunfailures"):
        for item in items:
            item.add_marker(rerun_once_on(r"\[WinError 1359\]"))


@pytest.fixture
def claude_exe() -> Path:
    """The real claude.exe of the pinned version, which scripts/setup-windows unpacks."""
    path = os.environ.get("HOSTLINK_WINDOWS_CLAUDE")
    if not path or not Path(path).is_file():
        message = f"claude.exe is not installed ({path or 'HOSTLINK_WINDOWS_CLAUDE unset'}): run scripts/test-windows"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return Path(path)


@pytest.fixture
def fake_api():
    """The fake Anthropic Messages API on 127.0.0.1, for one test."""
    with fake_anthropic.FakeAnthropic() as api:
        yield api
