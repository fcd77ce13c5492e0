"""The serve tests' fixtures: a module's `hostlink serve` (`server`, `fresh_script` in
tests/conftest.py) talks to this folder's fake API, one per module."""

import openai
import pytest

from serve_support import KEY, fa


@pytest.fixture(scope="module")
def api():
    """The fake Anthropic API of a module: its server's `claude` children call it."""
    with fa.FakeAnthropic() as fake:
        yield fake


@pytest.fixture
def gpt(server):
    """The official `openai` client of the module's server (closed after the test: a client left
    to the collector holds its connection until a later test's collection warns about it)."""
    with openai.OpenAI(base_url=server.base_url + "/v1", api_key=KEY, max_retries=0) as client:
        yield client
