"""hostlink.host: the registry, lifecycle order, cancellation, and side-effect-free registration."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest

from hostlink.host import (
    Cancelled,
    CancelSignal,
    CommandSpec,
    Registry,
    Session,
    ToolResult,
    ToolSpec,
)


async def _noop(*_args):
    return ToolResult(())


def test_names_are_claimed_once():
    registry = Registry()
    tool = ToolSpec("mcp", "d", {"type": "object"}, _noop)
    registry.register_tool(tool)
    with pytest.raises(ValueError, match="tool 'mcp' is already registered"):
        registry.register_tool(tool)
    registry.register_command(CommandSpec("mcp", "d", _noop))  # commands are a separate table
    assert tool.definition().name == "mcp"


def test_lifecycle_runs_start_in_order_and_shutdown_in_reverse_even_after_a_failure():
    registry = Registry()
    seen = []

    def starter(name):
        async def start(session):
            seen.append(("start", name, session.project_trusted))

        return start

    def stopper(name, fail=False):
        async def stop():
            seen.append(("stop", name))
            if fail:
                raise RuntimeError(f"{name} failed")

        return stop

    for name in ("a", "b"):
        registry.on_session_start(starter(name))
    registry.on_session_shutdown(stopper("a"))
    registry.on_session_shutdown(stopper("b", fail=True))

    async def run():
        await registry.start_session(Session(Path("."), False, notifier=None, output=None, command="hostlink",
                                             lasting=True))
        with pytest.raises(RuntimeError, match="b failed"):
            await registry.shutdown_session()

    anyio.run(run)
    assert seen == [("start", "a", False), ("start", "b", False), ("stop", "b"), ("stop", "a")]


def test_cancel_signal():
    signal = CancelSignal()
    calls = []
    unregister = signal.on_cancel(lambda: calls.append("first"))
    signal.on_cancel(lambda: calls.append("second"))
    unregister()
    signal.raise_if_cancelled()
    signal.cancel("user pressed escape")
    signal.cancel("again")  # only the first reason counts, callbacks run once
    assert calls == ["second"] and signal.reason == "user pressed escape"
    with pytest.raises(Cancelled, match="user pressed escape"):
        signal.raise_if_cancelled()
    signal.on_cancel(lambda: calls.append("late"))  # already cancelled: runs at once
    assert calls == ["second", "late"]


EXTENSIONS = [
    ("hostlink.mcp.extension", "McpExtension"),
    ("hostlink.claude_code.extension", "ClaudeCodeExtension"),
]

# Runs in a fresh interpreter: an audit hook records every network, process, file-write and
# keyring event while the extension is imported and registered.
_PROBE = textwrap.dedent(
    """
    import importlib, json, sys
    events = []
    WATCH = ("socket.", "subprocess.", "os.system", "os.exec", "os.posix_spawn", "os.fork", "pty.")
    def hook(event, args):
        if event.startswith(WATCH):
            events.append(event)
        elif event == "open" and isinstance(args[0], str) and args[1] not in (None, "r", "rb"):
            events.append("open-for-write " + args[0])
    sys.addaudithook(hook)
    from hostlink.host import Registry
    module = importlib.import_module(sys.argv[1])
    registry = Registry()
    getattr(module, sys.argv[2])().register(registry)
    heavy = sorted(name for name in ("mcp", "keyring", "llm", "httpx2") if name in sys.modules)
    print(json.dumps({"events": events, "heavy": heavy,
                      "tools": sorted(registry.tools), "providers": sorted(registry.providers)}))
    """
)


@pytest.mark.parametrize(("module", "factory"), EXTENSIONS)
def test_registration_has_no_side_effects(module, factory, tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, module, factory],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["events"] == []
    assert report["heavy"] == []
    assert report["tools"] or report["providers"]


def test_cli_import_pulls_in_no_sdk_keyring_or_llm():
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import hostlink.cli"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    imported = {line.split("|")[-1].strip() for line in result.stderr.splitlines() if "|" in line}
    top = {name.split(".")[0] for name in imported}
    assert "hostlink.cli" in imported
    assert not top & {"mcp", "mcp_types", "keyring", "llm", "httpx2", "pydantic", "anyio"}, top
