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

# litellm fetches a price list from the internet at import otherwise (the import checks, the
# LiteLLM host's round), retrying for seconds in the offline lane: only loopback is reached.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


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
