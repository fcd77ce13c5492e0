"""Fixtures of the adapters' tests."""

import json
import os
import sys
from pathlib import Path

import pytest

from claude_transport_support import live_processes_mentioning
from hostlink.claude_code import metrics
from hostlink.claude_code import provider as provider_module
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
    import litellm

    return litellm


@pytest.fixture(scope="session")
def register(litellm):
    """The LiteLLM host's `register` (its module subclasses litellm's `CustomLLM`)."""
    from hostlink.adapters.litellm import register

    return register


def claude_environ(home: Path) -> dict[str, str]:
    """A HOME of the test's own, and a PATH that finds the pinned `claude` first."""
    return {"HOME": str(home), "PATH": f"{Path(CLAUDE).parent}{os.pathsep}{os.environ['PATH']}"}


def fake_api_options(api) -> ClaudeTransportOptions:
    return ClaudeTransportOptions(test_api_base_url=api.base_url, test_api_key="sk-fake-test")


@pytest.fixture
def make_chat(api, home, runtime_dir):
    """What makes a `ChatClaudeCode` on the fake API (one no fixture holds)."""
    from hostlink.adapters.langchain import ChatClaudeCode

    return lambda: ChatClaudeCode(model="sonnet", cwd=home, environ=claude_environ(home), options=fake_api_options(api))


@pytest.fixture
def chat(make_chat):
    """A `ChatClaudeCode` on the fake API; afterwards a conversation the test left after a
    round of tool calls is ended."""
    model = make_chat()
    yield model
    model.close()


@pytest.fixture
def registered(api, home, runtime_dir, litellm, register):
    """`claude-code/<model>` registered on the fake API; afterwards LiteLLM's provider map is as
    it was, a conversation left after a round of tool calls is ended, and no `claude` nor
    private file is left."""
    before = litellm.custom_provider_map
    handler = register(home, options=fake_api_options(api), environ=claude_environ(home))
    yield handler
    handler.close()
    litellm.custom_provider_map = before
    assert live_processes_mentioning(str(runtime_dir)) == []
    (runtime_dir / metrics.FILE_NAME).unlink(missing_ok=True)


@pytest.fixture
def cold_starts(monkeypatch) -> list[int]:
    """Counts the children a request starts itself (not the prewarmed ones): the cold starts."""
    starts: list[int] = []
    cold = provider_module.start_child

    async def counted(spec):
        starts.append(1)
        return await cold(spec)

    monkeypatch.setattr(provider_module, "start_child", counted)
    return starts


@pytest.fixture
def scripted_conversations(monkeypatch):
    """The `claude-code` provider of every LangChain or LiteLLM model's conversations streams the
    replies appended here, in turn (host_support.ScriptedClaudeCode); sessions and loops stay real."""
    from host_support import ScriptedClaudeCode
    from hostlink.adapters.claude_request import Conversations
    from hostlink.host.session import HostSession

    replies: list = []
    monkeypatch.setattr(Conversations, "_host", lambda self: HostSession([ScriptedClaudeCode(replies)]))
    return replies
