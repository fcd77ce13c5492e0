"""`hostlink mcp serve` driven by the MCP SDK's own client, as an MCP host drives it: the tools
face, malformed messages and shutdown (with a call through the proxy face) over real stdio;
the proxy face's listing, bounds and errors, progress, cancellation, reload and log messages,
which are the gateway's and not its stdio's, on the gateway in this process over the SDK's
memory streams (`gateway_in_process`); the fixture server these ask is the module's over
HTTP (`web`), each gateway on a session of its own."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from gateway_support import (
    HOSTLINK,
    demo,
    fixture,
    gateway_env,
    gateway_in_process,
    leftovers,
    live_mentioning,
    stdio_gateway,
)
from hostlink.gateway.naming import MAX_NAME, exposed_names, split_uri
from process_support import started

pytestmark = pytest.mark.anyio
RECORDER = Path(__file__).parents[1] / "fakes" / "mcp_recording_server.py"


def text(result) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


async def test_proxy_face_offers_the_one_mcp_tool_and_calls_through_it(tmp_path, web):
    """What the proxy face lists, and how it bounds, cleans and refuses what comes through it:
    the gateway's, so in this process; its stdio is that of the tests of stopping."""
    servers = {"demo": demo(), "fx": {"url": web.url}}
    async with gateway_in_process(tmp_path, servers) as client:
        listed = await client.list_tools()
        assert [tool.name for tool in listed.tools] == ["mcp"]
        echoed = await client.call_tool("mcp", {"action": "call", "server": "demo", "tool": "echo",
                                                "args": {"text": "through the gateway"}})
        assert not echoed.is_error and text(echoed) == "through the gateway"
        escaped = await client.call_tool("mcp", {"action": "call", "server": "fx", "tool": "escapes"})
        assert "\x1b" not in text(escaped) and "red" in text(escaped)
        big = await client.call_tool("mcp", {"action": "call", "server": "fx", "tool": "big",
                                             "args": {"n_bytes": 300_000}})
        assert len(text(big).encode()) < 60 * 1024 and "[output truncated: " in text(big)
        failed = await client.call_tool("mcp", {"action": "call", "server": "nope", "tool": "x"})
        assert failed.is_error and "'nope'" in text(failed) and "Traceback" not in text(failed)
    assert live_mentioning(str(tmp_path)) == [] and leftovers(tmp_path) == []


async def test_unreadable_trust_records_are_told_and_the_projects_servers_left_out(tmp_path):
    """A project's own servers run only in a trusted project; records that cannot be read
    trust none, and the person hears why."""
    import io

    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": demo()}}))
    records = tmp_path / "config" / "hostlink" / "trusted-projects.json"
    records.parent.mkdir(parents=True)
    records.write_text("not what hostlink wrote")
    errlog = io.StringIO()
    async with gateway_in_process(tmp_path, {"demo": demo()}, errlog=errlog) as client:
        status = text(await client.call_tool("mcp", {"action": "status"}))
    assert f"the project {tmp_path} is untrusted: the trusted-projects records cannot be read" in errlog.getvalue()
    assert "demo" in status and "proj" not in status


async def test_proxy_definition_is_the_same_whatever_the_servers(tmp_path):
    sizes = []
    for count in (1, 3):
        servers = {f"s{i}": demo() for i in range(count)}
        async with gateway_in_process(tmp_path / str(count), servers) as client:
            listed = await client.list_tools()
            sizes.append(len(json.dumps([tool.model_dump(mode="json") for tool in listed.tools])))
    assert sizes[0] == sizes[1]
    assert live_mentioning(str(tmp_path)) == []


async def test_tools_face_prefixes_tools_resources_and_prompts(tmp_path):
    async with stdio_gateway(tmp_path, {"demo": demo(), "fx": fixture()}, "--expose", "tools") as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert "demo__echo" in tools and "fx__structured" in tools
        assert "fx__app_only" not in tools  # app-only tools stay hidden
        assert tools["fx__structured"].output_schema is not None
        structured = await client.call_tool("fx__structured", {"city": "Oslo"})
        assert structured.structured_content["city"] == "Oslo"
        bad = await client.call_tool("demo__echo", {"wrong": 1})
        assert bad.is_error and "input schema" in text(bad)
        hidden = await client.call_tool("fx__app_only", {})
        assert hidden.is_error and "Unknown tool" in text(hidden)
        resources = (await client.list_resources()).resources
        readme = next(r for r in resources if r.name == "fx__readme")
        assert split_uri(str(readme.uri))[0] == "fx"
        read = await client.read_resource(readme.uri)
        assert read.contents[0].text and str(read.contents[0].uri) == str(readme.uri)
        escapes = next(r for r in resources if r.name == "fx__escapes")
        assert "\x1b" not in (await client.read_resource(escapes.uri)).contents[0].text
        prompts = {p.name for p in (await client.list_prompts()).prompts}
        assert "fx__greet" in prompts
        got = await client.get_prompt("fx__greet", {"name": "Ada"})
        assert "Ada" in got.messages[0].content.text
    assert live_mentioning(str(tmp_path)) == [] and leftovers(tmp_path) == []


def test_schema_texts_are_sanitized_and_values_kept():
    from hostlink.gateway.tools_face import _schema

    schema = {"type": "object", "description": "a \x1b[31mred\x1b[0m tool", "properties": {
        "mode": {"enum": ["\x1b[1m"], "description": "pick \x07one", "title": "Mode\x1b]0;x\x07"}}}
    assert _schema(schema) == {"type": "object", "description": "a red tool", "properties": {
        "mode": {"enum": ["\x1b[1m"], "description": "pick one", "title": "Mode"}}}


def test_names_are_bounded_plain_when_possible_and_never_shared():
    long_tool = "t" * 80
    names = exposed_names([("a__b", "c"), ("a", "b__c"), ("srv", "get.thing"), ("srv", long_tool), ("srv", "ok")])
    assert all(len(name) <= MAX_NAME for name in names)
    assert len(names) == 5 and "srv__ok" in names
    assert "a__b__c" not in names  # the two pairs that would share it are both hashed
    assert names == exposed_names(reversed(list(names.values())))  # the same whatever the order


async def test_progress_reaches_the_host_with_its_own_token(tmp_path, web):
    seen = []

    async def on_progress(progress, total, message):
        seen.append((progress, message))

    async with gateway_in_process(tmp_path, {"fx": {"url": web.url}}, "tools") as client:
        await client.list_tools()
        done = await client.call_tool("fx__progress", {"steps": 3, "pause": 0.05}, progress_callback=on_progress)
        assert not done.is_error
    assert len(seen) >= 2
    assert all(message and "\x1b" not in message and "\x07" not in message for _, message in seen)  # sanitized


async def test_cancelling_a_call_stops_the_upstream_call(tmp_path):
    log = tmp_path / "received.jsonl"
    recorder = {"command": sys.executable, "args": [str(RECORDER), str(log)], "protocolVersion": "legacy"}
    async with gateway_in_process(tmp_path, {"rec": recorder}, "tools") as client:
        await client.list_tools()
        with anyio.move_on_after(2):
            await client.call_tool("rec__wait", {})
        with anyio.fail_after(10):  # the gateway still serves, and the next call is answered at once
            answered = await client.call_tool("rec__echo", {"text": "after"})
        assert text(answered) == "after"
    received = [json.loads(line) for line in log.read_text().splitlines()]
    (call,) = [entry for entry in received if entry["method"] == "tools/call" and entry["id"] is not None][:1]
    cancelled = [entry for entry in received if entry["method"] == "notifications/cancelled"]
    assert [entry["requestId"] for entry in cancelled] == [call["id"]]  # the upstream call was cancelled
    assert live_mentioning(str(tmp_path)) == []


async def test_a_changed_configuration_is_read_again_and_announced(tmp_path, web):
    changes = []

    async def on_message(message):
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            changes.append(message)

    async with gateway_in_process(tmp_path, {"fx": {"url": web.url}}, "tools", message_handler=on_message,
                                  mode="legacy") as client:  # list_changed is a handshake-era notification
        before = {tool.name for tool in (await client.list_tools()).tools}
        config = tmp_path / "config" / "mcp" / "mcp.json"
        time.sleep(0.01)
        config.write_text(json.dumps({"mcpServers": {"fx": {"url": web.url}, "other": {"url": web.url}}}))
        after = {tool.name for tool in (await client.list_tools()).tools}
        await anyio.sleep(0.2)
    assert "other__echo" not in before and "other__echo" in after
    assert changes


def run_gateway(tmp_path, servers, *args):
    return started([HOSTLINK, "mcp", "serve", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE, env=gateway_env(tmp_path, servers), cwd=tmp_path)


def handshake(proc) -> None:
    """Initialize and call a tool, so that an upstream server is running."""
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "mcp", "arguments": {"action": "call", "server": "fx", "tool": "pid"}}},
    ]
    for message in messages:
        proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()
    answers = [json.loads(proc.stdout.readline()) for _ in range(2)]
    assert answers[1]["id"] == 2 and not answers[1]["result"].get("isError"), answers


@pytest.mark.parametrize("how", ["stdin", "SIGTERM", "SIGHUP"])
def test_stopping_stops_every_server_and_removes_every_private_file(tmp_path, how):
    with run_gateway(tmp_path, {"fx": fixture()}) as proc:
        handshake(proc)
        assert len(live_mentioning(str(tmp_path))) >= 2  # the gateway and its fixture server
        if how == "stdin":
            proc.stdin.close()
        else:
            proc.send_signal(getattr(signal, how))
        code = proc.wait(timeout=20)
        err = proc.stderr.read()
    assert code == (0 if how == "stdin" else 128 + getattr(signal, how)), err
    assert b"Traceback" not in err
    assert live_mentioning(str(tmp_path)) == []
    assert leftovers(tmp_path) == []


def test_malformed_messages_get_json_rpc_errors(tmp_path):
    with run_gateway(tmp_path, {"fx": fixture()}) as proc:
        proc.stdin.write(b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": '
                         b'"2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}\n')
        proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        proc.stdin.write(b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": 5}}\n')
        proc.stdin.write(b'{"jsonrpc": "2.0", "id": 3, "method": "no/such/method"}\n')
        proc.stdin.flush()
        answers = {}
        while len(answers) < 3:
            line = json.loads(proc.stdout.readline())
            answers[line.get("id")] = line
        proc.stdin.close()
        proc.wait(timeout=20)
        assert b"Traceback" not in proc.stderr.read()
    assert answers[2]["error"]["code"] == -32602
    assert answers[3]["error"]["code"] == -32601


async def test_server_log_messages_reach_the_host_that_asked_at_its_level(tmp_path, web):
    """An upstream server's log messages during a call arrive as the host's own
    `notifications/message`: at or above the level it set (`logging/setLevel` on a legacy
    session, the request's own level on 2026-07-28), the logger naming the server, the data
    one sanitized, bounded text. A host that set no level gets none."""
    from mcp.shared.exceptions import MCPDeprecationWarning

    heard: dict[str, list] = {"legacy": [], "2026-07-28": []}
    for mode, found in heard.items():
        async def on_log(params, found=found):
            found.append(params)

        level = {"log_level": "info"} if mode != "legacy" else {}
        async with gateway_in_process(tmp_path / mode, {"fx": {"url": web.url}}, "tools", logging_callback=on_log,
                                      mode=mode, **level) as client:
            await client.list_tools()
            if mode == "legacy":
                assert text(await client.call_tool("fx__logs", {})) == "logged"
                assert found == []  # no level set: no log messages
                with pytest.warns(MCPDeprecationWarning):
                    await client.set_logging_level("info")
            assert text(await client.call_tool("fx__logs", {})) == "logged"
    for mode, found in heard.items():
        assert [(params.level, params.logger) for params in found] == [
            ("info", "fx/worker"), ("warning", "fx"), ("error", "fx")], mode
        info, warning, error = (params.data for params in found)
        assert info.startswith("info plain red") and "\x1b" not in info and "\x07" not in info and "\x9b" not in info
        assert len(warning) <= 2000 and warning.endswith("…")
        assert error == '{"code":7,"why":"\\u001b[2Jcleared"}'  # compact JSON: the escape as text
