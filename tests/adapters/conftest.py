"""Fixtures of the adapters' tests."""

import json
import os
import sys
from pathlib import Path

import pytest

from claude_transport_support import live_processes_mentioning
from hostlink.claude_code import metrics
from hostlink.claude_code.process import ClaudeTransportOptions
from llm_support import leftover_processes
from peers import CLAUDE


@pytest.fixture
def marker(request, tmp_path) -> str:
    """A string in the environment of the servers a test starts, to find any left running."""
    return f"hostlink-{request.module.__name__}-{tmp_path.name}"


@pytest.fixture
def project(tmp_path, marker):
    """A project whose .mcp.json names the demo server, whose environment carries the marker."""
    path = tmp_path / "project"
    path.mkdir()
    demo = {"command": sys.executable, "args": ["-m", "hostlink.demo"], "env": {"TEST_MARKER": marker}}
    (path / ".mcp.json").write_text(json.dumps({"mcpServers": {"demo": demo}}))
    yield path
    assert leftover_processes(marker) == []


@pytest.fixture(scope="session")
def litellm():
    """litellm, imported by the tests that drive it: seconds of import that the other test files'
    workers need not pay when they collect the suite."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm fetches a price list at import otherwise
    import litellm

    return litellm


@pytest.fixture(scope="session")
def register(litellm):
    """The LiteLLM host's `register` (its module subclasses litellm's `CustomLLM`)."""
    from hostlink.adapters.litellm import register

    return register


@pytest.fixture
def registered(api, home, runtime_dir, litellm, register):
    """`claude-code/<model>` registered on the fake API; afterwards LiteLLM's provider map is as
    it was and no `claude` nor private file is left."""
    before = litellm.custom_provider_map
    environ = {"HOME": str(home), "PATH": f"{Path(CLAUDE).parent}{os.pathsep}{os.environ['PATH']}"}
    register(home, options=ClaudeTransportOptions(test_api_base_url=api.base_url, test_api_key="sk-fake-test"),
             environ=environ)
    yield
    litellm.custom_provider_map = before
    assert live_processes_mentioning(str(runtime_dir)) == []
    (runtime_dir / metrics.FILE_NAME).unlink(missing_ok=True)
