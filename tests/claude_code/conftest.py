"""The Claude Code tests' fixtures: the fake `claude` and the runtime dir whose metrics are cleaned."""

import pytest

from claude_transport_support import FakeClaude
from hostlink.claude_code import metrics


@pytest.fixture
def fake(tmp_path):
    """The fake `claude` (tests/fakes/fake_claude.py) in `tmp_path`."""
    return FakeClaude(tmp_path)


@pytest.fixture
def stored(runtime_dir):
    """The runtime dir, whose last-request record (kept on purpose) is removed after the test."""
    yield runtime_dir
    (runtime_dir / metrics.FILE_NAME).unlink(missing_ok=True)
