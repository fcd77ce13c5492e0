"""The `claude_code_web_search` tool: a separate Claude process limited to WebSearch/WebFetch.

The fake `claude` covers the failure paths (inventory, auth, disclosure, cancellation);
the real CLI against the fake Messages API covers a whole search: Claude proposes
WebSearch, the CLI runs it (a nested API request with the server-side `web_search` tool),
and the final answer comes back bounded.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest

from claude_transport_support import (
    FAKES,
    FakeClaude,
    live_processes_mentioning,
)
from hostlink.claude_code.process import ClaudeTransportOptions
from hostlink.claude_code.web_search import MAX_QUERY_CHARS, TOOL_NAME, WebSearch
from hostlink.host import CancelSignal
from hostlink.host.output import MAX_INLINE_BYTES, OutputSession
from peers import CLAUDE, requires_claude

sys.path.insert(0, str(FAKES))
import fake_anthropic as fa

QUERY = "which python version was released most recently"

SEARCH_INIT = {
    "type": "system",
    "subtype": "init",
    "tools": ["WebFetch", "WebSearch"],
    "mcp_servers": [],
    "model": "claude-fake-1",
    "permissionMode": "dontAsk",
    "slash_commands": [],
    "skills": [],
    "plugins": [],
    "apiKeySource": "none",
    "claude_code_version": "2.1.332",
}


@pytest.fixture
def output(runtime_dir):
    session = OutputSession()
    yield session
    session.close()


def fake_search(fake: FakeClaude, output: OutputSession) -> WebSearch:
    environ = {"HOME": str(fake.home), "PATH": os.environ["PATH"], "CLAUDE_CONFIG_DIR": str(fake.config_dir),
               "ANTHROPIC_API_KEY": "sk-parent-key", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    return WebSearch(str(fake.executable), output=lambda: output, cwd=lambda: fake.home, environ=environ)


def script(fake: FakeClaude, *after_init, init_override=None, control=None):
    init = {**SEARCH_INIT, **(init_override or {})}
    fake.script({"op": "control", **(control or {})}, {"op": "read_user"}, {"op": "emit", "record": init}, *after_init)


def answer(text):
    return {"op": "result", "fields": {"result": text}}


def text_of(result) -> str:
    (part,) = result.content
    return part.text


def test_tool_definition():
    spec = WebSearch(None, output=lambda: None).tool()
    assert spec.name == TOOL_NAME == "claude_code_web_search"
    assert spec.parameters["required"] == ["query"]
    assert spec.parameters["additionalProperties"] is False


@pytest.mark.anyio
async def test_search_answer_with_the_query_only_in_a_private_file(fake, output, runtime_dir):
    script(fake, answer("Python 3.14 \x1b[31mwas released\x1b[0m. [python.org](https://python.org)"))
    result = await fake_search(fake, output).execute({"query": QUERY}, CancelSignal())
    assert not result.is_error
    assert text_of(result) == "Python 3.14 was released. [python.org](https://python.org)"

    (argv,) = fake.logged("argv")
    assert not any(QUERY in item for item in argv)
    assert argv[argv.index("--tools") + 1] == "WebSearch,WebFetch"
    assert argv[argv.index("--allowedTools") + 1] == "WebSearch,WebFetch"
    assert argv[argv.index("--permission-mode") + 1] == "dontAsk"
    assert "--mcp-config" not in argv and "--strict-mcp-config" in argv
    (env,) = fake.logged("env")
    assert not any(QUERY in value for value in env.values())
    assert "ANTHROPIC_API_KEY" not in env and "ANTHROPIC_BASE_URL" not in env
    control, user = (json.loads(line) for line in fake.logged("stdin"))
    assert control["request"]["subtype"] == "initialize"
    (block,) = user["message"]["content"]
    assert QUERY not in block["text"]
    reference = block["text"].split("@", 1)[1]
    assert reference.startswith('"') and reference.endswith('/query.txt"')
    assert Path(reference.strip('"')).is_absolute()
    assert not Path(reference.strip('"')).parent.exists()  # the private directory is gone


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"tools": ["WebFetch", "WebSearch", "Bash"]}, "tool inventory"),
        ({"tools": ["WebSearch"]}, "tool inventory"),
        ({"mcp_servers": [{"name": "other", "status": "connected"}]}, "MCP servers"),
        ({"permissionMode": "bypassPermissions"}, "dontAsk"),
        ({"plugins": [{"name": "x", "path": "builtin"}]}, "plugins"),
        ({"apiKeySource": "ANTHROPIC_API_KEY"}, "API key"),
    ],
)
@pytest.mark.anyio
async def test_init_inventory_is_checked_exactly(fake, output, runtime_dir, override, message):
    script(fake, answer("must not be returned"), init_override=override)
    result = await fake_search(fake, output).execute({"query": QUERY}, CancelSignal())
    assert result.is_error
    assert message in text_of(result) and "must not be returned" not in text_of(result)


@pytest.mark.anyio
async def test_an_api_key_account_is_refused_before_the_query_is_sent(fake, output, runtime_dir):
    fake.script({"op": "control", "account": {"apiKeySource": "ANTHROPIC_API_KEY"}}, {"op": "read_user"})
    result = await fake_search(fake, output).execute({"query": QUERY}, CancelSignal())
    assert result.is_error and "API key" in text_of(result)
    assert len(fake.logged("stdin")) == 1  # only the control request; no prompt was written


@pytest.mark.anyio
async def test_an_answer_naming_the_private_directory_is_withheld(fake, output, runtime_dir):
    script(fake, answer("I read $PRIVATE/query.txt"))
    result = await fake_search(fake, output).execute({"query": QUERY}, CancelSignal())
    assert result.is_error and "private path" in text_of(result)


@pytest.mark.anyio
async def test_a_failed_turn_is_an_error_not_an_answer(fake, output, runtime_dir):
    script(fake, {"op": "result", "fields": {"subtype": "error_during_execution", "is_error": True,
                                             "result": "API Error: 500 secret detail"}})
    result = await fake_search(fake, output).execute({"query": QUERY}, CancelSignal())
    assert result.is_error and "secret detail" not in text_of(result)


@pytest.mark.anyio
async def test_a_permission_request_fails_the_search(fake, output, runtime_dir):
    script(fake, {"op": "emit", "record": {"type": "control_request", "request_id": "1",
                                            "request": {"subtype": "can_use_tool", "tool_name": "Bash"}}})
    result = await fake_search(fake, output).execute({"query": QUERY}, CancelSignal())
    assert result.is_error and "permission" in text_of(result)


@pytest.mark.anyio
async def test_exit_without_an_answer_fails(fake, output, runtime_dir):
    script(fake, {"op": "exit", "code": 1})
    result = await fake_search(fake, output).execute({"query": QUERY}, CancelSignal())
    assert result.is_error and "exited before it answered" in text_of(result)


@pytest.mark.anyio
async def test_cancelled_before_launch_starts_nothing(fake, output, runtime_dir):
    script(fake, answer("x"))
    signal = CancelSignal()
    signal.cancel()
    result = await fake_search(fake, output).execute({"query": QUERY}, signal)
    assert result.is_error and "cancelled" in text_of(result)
    assert fake.log() == []


@pytest.mark.anyio
async def test_cancel_during_the_search_stops_the_process(fake, output, runtime_dir):
    script(fake, {"op": "wait_signal"})
    signal = CancelSignal()
    search = fake_search(fake, output)
    async with anyio.create_task_group() as group:
        results = []

        async def run():
            results.append(await search.execute({"query": QUERY}, signal))

        group.start_soon(run)
        for _ in range(500):
            if fake.logged("stdin")[1:]:
                break
            await anyio.sleep(0.01)
        await anyio.sleep(0.1)
        signal.cancel()
    (result,) = results
    assert result.is_error and "cancelled" in text_of(result)
    # The fake's command line names the private directory (its --system-prompt-file).
    assert live_processes_mentioning(str(runtime_dir)) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "non-empty string"),
        ({"query": "   "}, "non-empty string"),
        ({"query": 3}, "non-empty string"),
        ({"query": "x" * (MAX_QUERY_CHARS + 1)}, "longer than"),
        ({"query": "a\x00b"}, "NUL"),
        ({"query": "q", "limit": 3}, "unexpected argument 'limit'"),
    ],
)
@pytest.mark.anyio
async def test_bad_arguments_fail_without_starting_claude(fake, output, runtime_dir, args, message):
    script(fake, answer("x"))
    result = await fake_search(fake, output).execute(args, CancelSignal())
    assert result.is_error and message in text_of(result)
    assert fake.log() == []


@pytest.mark.anyio
async def test_without_claude_the_tool_explains(output):
    result = await WebSearch(None, output=lambda: output).execute({"query": QUERY}, CancelSignal())
    assert result.is_error and "claude CLI is not installed" in text_of(result)


# --- the real CLI -------------------------------------------------------------------------

real_cli = requires_claude


def real_search(api, home: Path, output: OutputSession) -> WebSearch:
    return WebSearch(
        str(CLAUDE),
        output=lambda: output,
        cwd=lambda: home,
        options=ClaudeTransportOptions(test_api_base_url=api.base_url, test_api_key="sk-fake-test"),
        environ={"HOME": str(home), "PATH": os.environ["PATH"]},
    )


@real_cli
@pytest.mark.slow
@pytest.mark.anyio
async def test_real_cli_runs_web_search_and_returns_the_bounded_answer(tmp_path, output, runtime_dir):
    home = tmp_path / "home"
    home.mkdir()
    big = "".join(f"line {i}: Python 3.14 news\n" for i in range(5000))
    with fa.FakeAnthropic() as api:
        api.push(
            fa.tool_use("WebSearch", {"query": "python release"}),
            fa.text("Python 3.14.0 was released. https://www.python.org/downloads/"),
            fa.text("Python 3.14 is the newest release.\n" + big, chunk=4096),
        )
        result = await real_search(api, home, output).execute({"query": QUERY}, CancelSignal())
        requests = api.messages_requests()

    assert not result.is_error, text_of(result)
    text = text_of(result)
    assert text.startswith("Python 3.14 is the newest release.")
    assert len(text.encode()) <= MAX_INLINE_BYTES + 1024 and "truncated" in text
    assert output.used_bytes > MAX_INLINE_BYTES  # the full answer went to an overflow file

    first, nested, final = requests
    # The main conversation offers exactly the two web tools, and the query arrived as the
    # content of the attached private file, not as prompt text.
    assert sorted(t["name"] for t in first["tools"] if t["name"] in ("WebSearch", "WebFetch", "Bash", "Read")) == [
        "WebFetch", "WebSearch"]
    sent = json.dumps(first["messages"])
    assert QUERY in sent and "query.txt" in sent
    assert [t.get("name") for t in nested["tools"]] == ["web_search"]
    assert "Python 3.14.0 was released" in json.dumps(final["messages"])
    assert live_processes_mentioning(str(runtime_dir)) == []


@real_cli
@pytest.mark.slow
@pytest.mark.anyio
async def test_real_cli_init_matches_the_search_inventory(tmp_path, output, runtime_dir):
    """The real CLI's init is what the exact check expects (otherwise every search fails)."""
    home = tmp_path / "home"
    home.mkdir()
    with fa.FakeAnthropic() as api:
        api.push(fa.text("No search needed."))
        result = await real_search(api, home, output).execute({"query": "say hi"}, CancelSignal())
    assert not result.is_error, text_of(result)
    assert text_of(result) == "No search needed."


@pytest.mark.anyio
@pytest.mark.parametrize(("after_init", "message"), [
    ([{"op": "emit", "record": SEARCH_INIT}], "the web search failed: claude sent a second init record"),
    ([answer("  ")], "the web search finished without an answer"),
    ([answer("fine"), {"op": "exit", "code": 3}],
     "the web search failed: claude did not exit cleanly after answering"),
], ids=["second-init", "blank-answer", "bad-exit"])  # fmt: skip
async def test_a_search_that_ends_badly_says_how(fake, output, runtime_dir, after_init, message):
    script(fake, *after_init)
    result = await fake_search(fake, output).execute({"query": QUERY}, CancelSignal())
    assert result.is_error and text_of(result) == message
    assert live_processes_mentioning(str(fake.executable)) == []


@pytest.mark.anyio
async def test_a_search_that_takes_too_long_is_stopped(fake, output, runtime_dir, monkeypatch):
    from hostlink.claude_code import web_search

    monkeypatch.setattr(web_search, "TIMEOUT_SECONDS", 1.0)
    script(fake, {"op": "wait_signal"})
    result = await fake_search(fake, output).execute({"query": QUERY}, CancelSignal())
    assert result.is_error and text_of(result) == "the web search took longer than 1 seconds"
    assert live_processes_mentioning(str(fake.executable)) == []


@pytest.mark.anyio
async def test_a_cli_lacking_an_option_the_search_needs_is_refused(fake, output, runtime_dir):
    fake.script(answer("x"), lacks=["--tools"])
    result = await fake_search(fake, output).execute({"query": QUERY}, CancelSignal())
    assert result.is_error and text_of(result).startswith("the web search cannot run: ")
    assert "--tools" in text_of(result)
    assert fake.logged("argv") == []  # refused before a start
