"""The `mcp` tool through the real host path: extension, registry, session, fixture server."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest
from jsonschema import Draft202012Validator

from hostlink.host import CancelSignal, CommandFailed, ImageContent, Registry
from hostlink.host.output import MAX_INLINE_BYTES
from hostlink.mcp.extension import McpExtension
from hostlink.mcp.tool import PARAMETERS
from mcp_runtime_support import FIXTURE, Host, fixture_children, stdio, text

pytestmark = pytest.mark.anyio

TERMINAL_CONTROLS = [chr(c) for c in range(0x20) if c not in (9, 10)] + ["\x7f"] + [chr(c) for c in range(0x80, 0xA0)]


@pytest.fixture
async def host(tmp_path, runtime_dir):
    async with Host(McpExtension(servers={"fx": stdio(), "off": stdio(disabled=True)}), tmp_path) as running:
        yield running
    assert fixture_children() == []


@pytest.fixture
async def served(web, tmp_path, runtime_dir):
    """A host whose `fx` is the module's HTTP fixture server (and `off` a disabled one)."""
    async with Host(McpExtension(servers={"fx": web.config(), "off": stdio(disabled=True)}), tmp_path) as running:
        yield running


def test_parameters_schema_is_strict_and_bounded():
    assert PARAMETERS["additionalProperties"] is False
    assert PARAMETERS["properties"]["action"]["enum"] == [
        "status", "tools", "call", "task", "cancel", "resources", "templates", "read", "prompts", "prompt", "complete",
        "auth", "reconnect", "reload"]
    limit = PARAMETERS["properties"]["limit"]
    assert (limit["minimum"], limit["maximum"], limit["default"]) == (1, 50, 20)
    wait, task = PARAMETERS["properties"]["wait"], PARAMETERS["properties"]["task"]
    assert (wait["minimum"], wait["maximum"], task["maxLength"]) == (0, 600, 200)
    Draft202012Validator.check_schema(PARAMETERS)


def test_description_says_server_data_is_untrusted_and_never_authorization():
    host_registry = Registry()
    McpExtension(servers={}).register(host_registry)
    description = host_registry.tools["mcp"].description
    assert "untrusted" in description and "authorization" in description


async def test_registration_does_no_io_and_config_is_read_at_session_start(tmp_path, runtime_dir):
    config_home = tmp_path / "config"
    (config_home / "mcp").mkdir(parents=True)
    (config_home / "mcp" / "mcp.json").write_text(json.dumps({"mcpServers": {"fx": {
        "command": stdio().command, "args": list(stdio().args)}}}))
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"sneaky": {"command": "/bin/true"}}}))
    extension = McpExtension(environ={"XDG_CONFIG_HOME": str(config_home), "HOME": str(tmp_path)})
    host = Host(extension, tmp_path)
    assert extension.runtime is None and not runtime_dir.exists() and fixture_children() == []
    async with host:
        assert list(extension.runtime.servers) == ["fx"]
        assert any(level == "warning" and "sneaky" in message for level, message in host.notes.seen)
        assert fixture_children() == []  # the session start connects nothing
        status = await host.run(action="status")
        assert text(status) == "fx: idle, stdio" and fixture_children() == []
        assert text(await host.run(action="call", server="fx", tool="echo", args={"text": "hi"})) == "hi"
        assert len(fixture_children()) == 1
    assert fixture_children() == [] and extension.runtime is None


async def test_broken_config_is_a_clear_error_at_session_start(tmp_path, runtime_dir):
    config_home = tmp_path / "config"
    (config_home / "mcp").mkdir(parents=True)
    (config_home / "mcp" / "mcp.json").write_text('{"mcpServers": {"x": {"command": "a"},}}')
    host = Host(McpExtension(environ={"XDG_CONFIG_HOME": str(config_home)}), tmp_path)
    async with host:
        assert any(level == "error" for level, _ in host.notes.seen)
        result = await host.run(action="status")
        assert result.is_error and "MCP configuration is invalid" in text(result)


async def test_a_broken_entry_is_that_servers_error_alone(tmp_path, runtime_dir):
    config_home = tmp_path / "config"
    (config_home / "mcp").mkdir(parents=True)
    (config_home / "mcp" / "mcp.json").write_text(json.dumps({"mcpServers": {
        "x": {"command": "a", "url": "https://e"}, "fx": {"command": sys.executable, "args": [FIXTURE]}}}))
    host = Host(McpExtension(environ={"XDG_CONFIG_HOME": str(config_home)}), tmp_path)
    async with host:
        assert [level for level, note in host.notes.seen if "'x' is misconfigured" in note] == ["warning"]
        status = text(await host.run(action="status"))
        assert "x: misconfigured: " in status and 'exactly one of "command"' in status
        assert "fx: idle" in status
        used = await host.run(action="tools", server="x")
        assert used.is_error and "MCP server 'x' is misconfigured" in text(used)
        assert not (await host.run(action="tools", server="fx")).is_error
        everywhere = text(await host.run(action="tools"))
        assert "[unavailable: MCP server 'x' is misconfigured]" in everywhere and "'echo'" in everywhere


async def test_tool_input_is_validated(host):
    for bad in ({"action": "nope"}, {"action": "tools", "limit": 0}, {"action": "tools", "limit": 51},
                {"action": "tools", "extra": 1}, {}, {"action": "call", "server": "fx"}):
        result = await host.tool.execute(bad, CancelSignal())
        assert result.is_error, bad
        assert "mcp tool input" in text(result) or "needs" in text(result)


async def test_status_never_connects(host):
    result = await host.run(action="status")
    assert not result.is_error
    assert text(result) == "fx: idle, stdio\noff: disabled"
    assert fixture_children() == []


async def test_tools_search_by_all_terms_case_insensitive_and_paged(served):
    everything = await served.run(action="tools", server="fx", limit=50)
    listing = text(everything)
    assert "app_only" not in listing  # visibility ["app"]: never listed for the model
    assert "[tools 1-16 of 16]" in listing
    assert '"required":["text"]' in listing  # the input schema is in the agent's content
    found = text(await served.run(action="tools", server="fx", query="TEXT escape"))
    assert "'escapes'" in found and "'echo'" not in found and "[tools 1-1 of 1]" in found
    page = text(await served.run(action="tools", server="fx", limit=3, offset=3))
    assert page.count("- server") == 3 and "[tools 4-6 of 16; next offset 6]" in page
    assert "no tools" in text(await served.run(action="tools", server="fx", query="zebra"))
    across = text(await served.run(action="tools", query="echo"))  # no server: every enabled server
    assert "server 'fx' tool 'echo'" in across


async def test_app_only_tool_cannot_be_called(served):
    result = await served.run(action="call", server="fx", tool="app_only")
    assert result.is_error and "does not offer a tool named 'app_only'" in text(result)


async def test_call_results_text_structured_error_and_images(served):
    echo = await served.run(action="call", server="fx", tool="echo", args={"text": "hello"})
    assert not echo.is_error and text(echo) == "hello"  # {"result": …} wrapping is not repeated
    structured = await served.run(action="call", server="fx", tool="structured", args={"city": "Oslo"})
    body = text(structured)
    assert body == '{"city":"Oslo","celsius":21.5,"conditions":["sunny","dry"]}'  # compact, exactly once
    failed = await served.run(action="call", server="fx", tool="fail")
    assert failed.is_error and text(failed) == "fixture failure"
    images = await served.run(action="call", server="fx", tool="image", args={"count": 6})
    kept = [item for item in images.content if isinstance(item, ImageContent)]
    assert len(kept) == 4 and kept[0].mime_type == "image/png"
    assert "2 images omitted" in text(images)
    huge = await served.run(action="call", server="fx", tool="image", args={"count": 1, "n_bytes": 2 * 1024 * 1024})
    assert not any(isinstance(item, ImageContent) for item in huge.content) and "omitted" in text(huge)


async def test_arguments_are_checked_against_the_input_schema_before_sending(web, tmp_path, runtime_dir):
    async with Host(McpExtension(servers={"web": web.config()}), tmp_path) as host:
        assert text(await host.run(action="call", server="web", tool="add", args={"a": 1, "b": 2})) == "3"
        before = web.count("/mcp")
        wrong_type = await host.run(action="call", server="web", tool="add", args={"a": "one", "b": 2})
        assert wrong_type.is_error
        assert "input schema of tool 'add'" in text(wrong_type) and "at a" in text(wrong_type)
        missing = await host.run(action="call", server="web", tool="add", args={"a": 1})
        assert missing.is_error and '"b" is a required property' in text(missing)
        unknown = await host.run(action="call", server="web", tool="nope")
        assert unknown.is_error
        # Nothing but (at most) one tool listing went to the server: no invalid call was sent.
        assert web.count("/mcp") - before <= 1


async def test_oversized_output_is_bounded_with_a_private_overflow_file(served, runtime_dir):
    result = await served.run(action="call", server="fx", tool="big", args={"n_bytes": 300_000})
    body = text(result)
    notice = body.rsplit("\n", 1)[1]
    assert notice.startswith("[output truncated: showing ") and "of 300000 bytes" in notice
    assert len(body.encode()) <= MAX_INLINE_BYTES + len(notice.encode()) + 1
    path = Path(notice.split("full output saved to ", 1)[1].rstrip("]"))
    assert path.is_file() and path.stat().st_size == 300_000
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert str(path).startswith(str(runtime_dir))
    await served.session.shutdown()  # the fixture's own shutdown after it does nothing: idempotent
    assert not path.exists()


async def test_escape_laden_output_is_stripped(served):
    for result in (await served.run(action="call", server="fx", tool="escapes"),
                   await served.run(action="read", server="fx", uri="fixture://escapes")):
        body = text(result)
        assert "plain" in body and "end" in body
        assert not any(ch in body for ch in TERMINAL_CONTROLS), repr(body)
        assert "evil.example" not in body


async def test_resources_templates_read_prompts_prompt_complete(served):
    resources = text(await served.run(action="resources", server="fx"))
    assert "fixture://readme" in resources and "[resources 1-2 of 2]" in resources
    templates = text(await served.run(action="templates", server="fx"))
    assert "fixture://items/{item_id}" in templates
    read = text(await served.run(action="read", server="fx", uri="fixture://readme"))
    assert "fixture readme" in read
    item = text(await served.run(action="read", server="fx", uri="fixture://items/beta"))
    assert '{"id": "beta"}' in item
    prompts = text(await served.run(action="prompts", server="fx"))
    assert "greet(name)" in prompts
    prompt = text(await served.run(action="prompt", server="fx", prompt="greet", args={"name": "Ada"}))
    assert "user: Please greet Ada warmly." in prompt
    completed = text(await served.run(action="complete", server="fx", uri="fixture://items/{item_id}",
                                    argument="item_id", value="g"))
    assert "- gamma" in completed and "alpha" not in completed and "has more" not in completed
    cut = text(await served.run(action="complete", server="fx", uri="fixture://items/{item_id}", argument="item_id"))
    assert cut.splitlines() == ["- alpha", "- beta", "[values 1-2 of 2; the server has more (refine the value)]"]
    pictured = await served.run(action="prompt", server="fx", prompt="picture")
    assert [(block.type, getattr(block, "text", None)) for block in pictured.content] == [
        ("text", "[prompt: Describe a picture.]\nuser:"), ("image", None), ("text", "assistant: A red pixel.")]
    by_prompt = text(await served.run(action="complete", server="fx", prompt="greet", argument="name", value="Al"))
    assert "- Alan" in by_prompt
    both = await served.run(action="complete", server="fx", prompt="greet", uri="x", argument="name")
    assert both.is_error


async def test_unknown_and_disabled_servers_are_tool_errors(host):
    unknown = await host.run(action="call", server="ghost", tool="echo")
    assert unknown.is_error and "unknown MCP server 'ghost'" in text(unknown)
    disabled = await host.run(action="tools", server="off")
    assert disabled.is_error and "disabled" in text(disabled)


async def test_auth_on_a_server_without_sign_in_by_link_is_one_line_and_touches_nothing(tmp_path, runtime_dir):
    from hostlink.mcp.config.schema import parse_server

    servers = {
        "fx": stdio(),
        "open": parse_server({"url": "http://127.0.0.1:9/mcp"}),
        "tok": parse_server({"url": "http://127.0.0.1:9/mcp", "auth": "bearer", "bearerTokenEnv": "TOK_VAR"}),
        "bot": parse_server({"url": "http://127.0.0.1:9/mcp", "auth": "oauth", "oauth": {
            "grantType": "client_credentials", "clientId": "bot", "clientSecretEnv": "BOT_SECRET",
            "issuer": "http://127.0.0.1:9"}}),
        "off": parse_server({"url": "http://127.0.0.1:9/mcp", "auth": "oauth", "disabled": True}),
    }
    expected = {
        "fx": "MCP server 'fx' is a local stdio server; it has no sign-in",
        "open": "MCP server 'open' has no \"auth\" configured; there is no sign-in for it",
        "tok": "MCP server 'tok' does not sign in with a link; its bearer token comes from the environment "
               "variable TOK_VAR",
        "bot": "MCP server 'bot' does not sign in with a link; it uses machine OAuth with the client secret "
               "from the environment variable BOT_SECRET",
        "off": "MCP server 'off' is disabled in its configuration",
        "ghost": "unknown MCP server 'ghost' (known: bot, fx, off, open, tok)",
    }
    async with Host(McpExtension(servers=servers), tmp_path) as host:
        for name, message in expected.items():
            result = await host.run(action="auth", server=name)
            assert result.is_error and text(result) == message, name
        missing = await host.run(action="auth")
        assert missing.is_error and text(missing) == "action 'auth' needs 'server'"
        assert all(host.extension.runtime.snapshot(name).state == "idle" for name in ("fx", "open", "tok", "bot"))
        assert fixture_children() == [] and host.extension._auth._hub.listening == 0
    without_auth = McpExtension(servers={"web": parse_server({"url": "http://127.0.0.1:9/mcp", "auth": "oauth"})},
                                auth_factory=lambda *_: None)
    async with Host(without_auth, tmp_path) as host:
        result = await host.run(action="auth", server="web")
        assert result.is_error and "authentication support is not configured" in text(result)


async def test_cancel_signal_cancels_only_that_call(host):
    signal = CancelSignal()
    results = {}

    async def slow() -> None:
        results["slow"] = await host.tool.execute(
            {"action": "call", "server": "fx", "tool": "slow", "args": {"seconds": 30}}, signal)

    async with anyio.create_task_group() as group:
        group.start_soon(slow)
        await anyio.sleep(1.0)
        signal.cancel("user pressed escape")
    assert results["slow"].is_error and "cancelled (user pressed escape)" in text(results["slow"])
    assert text(await host.run(action="call", server="fx", tool="echo", args={"text": "ok"})) == "ok"


async def test_host_command(host):
    command = host.registry.commands["mcp"]
    assert await command.run(["status"], CancelSignal()) == "fx: idle\noff: disabled"
    connected = await command.run(["connect", "fx"], CancelSignal())
    assert connected.startswith("fx: connected (protocol 2026-07-28, hostlink-fixture 1.0.0, 16 tools")
    tools = await command.run(["tools", "fx"], CancelSignal())
    assert "echo" in tools and "app_only" not in tools and "inputSchema" not in tools
    assert await command.run(["disconnect", "fx"], CancelSignal()) == "fx: idle"
    assert fixture_children() == []
    assert await command.run(["reconnect", "fx"], CancelSignal()) == "fx: reset to idle; the next use connects"
    assert fixture_children() == []  # reconnect resets; it does not connect
    with pytest.raises(CommandFailed, match="unknown MCP server 'ghost'"):
        await command.run(["connect", "ghost"], CancelSignal())
    assert (await command.run(["bogus"], CancelSignal())).startswith("usage: /mcp")


async def test_the_reconnect_action_brings_a_crashed_server_back_as_the_command_does(host):
    assert "reconnect (`server`)" in host.tool.description
    crashed = await host.run(action="call", server="fx", tool="crash")
    assert crashed.is_error and text(crashed).endswith("; use reconnect to start it again")
    latched = await host.run(action="call", server="fx", tool="echo", args={"text": "x"})
    assert latched.is_error and text(latched) == text(crashed)  # the latch holds without a reconnect
    answer = await host.run(action="reconnect", server="fx")
    assert not answer.is_error and text(answer) == "fx: reset to idle; the next use connects"
    assert answer.details["summary"] == "mcp reconnect fx: ok, 1 text (40 chars)"
    assert fixture_children() == []  # it resets; the next use starts the server
    assert text(await host.run(action="call", server="fx", tool="echo", args={"text": "back"})) == "back"
    await host.run(action="call", server="fx", tool="crash")
    command = host.registry.commands["mcp"]  # the same reset, the same words
    assert await command.run(["reconnect", "fx"], CancelSignal()) == text(answer)
    assert text(await host.run(action="call", server="fx", tool="echo", args={"text": "again"})) == "again"
    for args, said in (({}, "action 'reconnect' needs 'server'"), ({"server": "ghost"}, "unknown MCP server 'ghost'"),
                       ({"server": "off"}, "'off' is disabled")):
        refused = await host.run(action="reconnect", **args)
        assert refused.is_error and said in text(refused), text(refused)


async def test_results_carry_a_one_line_summary_for_host_displays(served):
    result = await served.run(action="call", server="fx", tool="echo", args={"text": "hello"})
    assert {key: value for key, value in result.details.items() if key != "result"} == {
        "summary": "mcp call fx/echo: ok, 1 text (5 chars)", "structuredContent": {"result": "hello"}}
    assert result.details["result"].content[0].text == "hello"  # as the server sent it, for a host that passes it on
    failed = await served.run(action="call", server="ghost", tool="x")
    assert failed.details["summary"] == "mcp call ghost/x: error, 1 text (" + str(len(text(failed))) + " chars)"
    assert failed.details["error"] == "unknown_server"


def _problems(schema: dict, arguments: dict) -> list[str]:
    from mcp_types import Tool

    from hostlink.mcp.runtime.validation import violations
    from hostlink.mcp.tool import argument_problems

    tool = Tool(name="t", input_schema=schema)
    return argument_problems(tool, arguments, violations(schema, arguments)).splitlines()


def test_an_argument_error_shows_ten_violations_and_counts_the_rest():
    schema = {"type": "object", "properties": {f"p{n:02}": {"type": "integer"} for n in range(13)}}
    lines = _problems(schema, {f"p{n:02}": "x" for n in range(13)})
    assert lines[1:11] == [f'- "x" is not of type "integer" at p{n:02}' for n in range(10)]
    assert lines[11] == "- and 3 more"


def test_keys_a_pattern_allows_are_not_called_unexpected():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}},
              "patternProperties": {"^x_": {"type": "string"}}}
    lines = _problems(schema, {"a": "one", "x_note": "fine"})
    assert lines[1] == '- "one" is not of type "integer" at a'
    assert not any("unexpected" in line for line in lines)
    assert any("unexpected property 'zzz'" in line for line in _problems(
        {"type": "object", "properties": {"a": {"type": "integer"}}}, {"a": "one", "zzz": 1}))


def test_a_value_json_cannot_write_is_named_as_python_writes_it():
    """An in-process caller (an adapter) may pass values no JSON holds: the message still reads."""
    lines = _problems({"type": "object", "properties": {"a": {"type": "integer"}}}, {"a": {frozenset(): "x"}})
    assert lines[1] == """- {frozenset(): 'x'} is not of type "integer" at a"""
