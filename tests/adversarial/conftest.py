"""The adversarial tests' fixtures: the hostile HTTP server, and the fake API of the modules that
attack a `hostlink serve` (`server`, `fresh_script` in tests/conftest.py), one per module."""

import subprocess
import sys

import pytest

from adversarial.support import HERE
from process_support import started
from serve_support import fa


@pytest.fixture(scope="module")
def api():
    """The fake Anthropic API of a module: its server's `claude` children call it."""
    with fa.FakeAnthropic() as fake:
        yield fake


@pytest.fixture
def hostile():
    """The base URL of `hostile_http.py` on 127.0.0.1: one attack under each path prefix."""
    with started([sys.executable, str(HERE / "hostile_http.py")], stdout=subprocess.PIPE,
                 stderr=subprocess.DEVNULL, text=True) as proc:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), "the hostile server did not start"
        yield url
