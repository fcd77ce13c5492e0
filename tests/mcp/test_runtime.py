"""McpRuntime against the SDK fixture server over real stdio pipes and real HTTP on 127.0.0.1: a test
about the server process (its start, pipes, crash, stderr, descriptors) starts its own child; one
about what the client decides asks the module's one HTTP server (`web`)."""

from __future__ import annotations

import gc
import os
import re
import sys

import anyio
import anyio.lowlevel
import pytest

from hostlink.mcp.config.schema import parse_server
from hostlink.mcp.errors import (
    AuthError,
    AuthRequired,
    CallFailed,
    ConnectFailed,
    RequestTimedOut,
    ServerDisabled,
    ServerNotFound,
)
from hostlink.mcp.runtime.clients import McpRuntime
from hostlink.mcp.runtime.listing import every_page
from mcp_runtime_support import alive, fixture_children, http_fixture, stdio

pytestmark = pytest.mark.anyio


def text_of(result) -> str:
    return "".join(block.text for block in result.content if block.type == "text")


async def pid_of(runtime: McpRuntime, name: str) -> int:
    result = await runtime.call_tool(name, "pid", {})
    return result.structured_content["result"]


async def test_lazy_connect_snapshots_and_teardown_leave_no_process():
    runtime = McpRuntime({"fx": stdio()})
    first = runtime.snapshot("fx")
    assert first.state == "idle" and fixture_children() == []
    connected = await runtime.connect("fx")
    assert connected.state == "connected"
    assert connected.protocol_version == "2026-07-28"  # auto found the modern era
    assert connected.server_name == "hostlink-fixture"
    assert {"tools", "resources", "prompts"} <= connected.capabilities
    assert first.state == "idle"  # snapshots are immutable values, replaced on change
    pid = await pid_of(runtime, "fx")
    assert connected.pid == pid and alive(pid)
    await runtime.aclose()
    assert runtime.snapshot("fx").state == "closed"
    assert not alive(pid) and fixture_children() == []
    with pytest.raises(ConnectFailed, match="shut down"):
        await runtime.connect("fx")


async def test_ten_concurrent_calls_share_one_stdio_process():
    runtime = McpRuntime({"fx": stdio()})
    pids: list[int] = []

    async def one() -> None:
        pids.append(await pid_of(runtime, "fx"))

    try:
        async with anyio.create_task_group() as group:
            for _ in range(10):
                group.start_soon(one)
        assert len(pids) == 10 and len(set(pids)) == 1
        assert fixture_children() == [pids[0]]
    finally:
        await runtime.aclose()
    assert fixture_children() == []


async def test_identical_concurrent_calls_are_not_deduplicated(web):
    runtime = McpRuntime({"fx": web.config()})
    try:
        results = []

        async def one() -> None:
            results.append(await runtime.call_tool("fx", "slow", {"seconds": 0.2}))

        async with anyio.create_task_group() as group:
            for _ in range(3):
                group.start_soon(one)
        assert [text_of(r) for r in results] == ["slept 0.2"] * 3
        assert len({id(r) for r in results}) == 3
    finally:
        await runtime.aclose()


async def test_cancelling_one_call_leaves_siblings_and_connection_usable():
    runtime = McpRuntime({"fx": stdio()})
    try:
        pid = await pid_of(runtime, "fx")
        sibling_results = []
        victim_done = anyio.Event()

        async def victim(scope: anyio.CancelScope) -> None:
            with scope:
                await runtime.call_tool("fx", "slow", {"seconds": 30})
            victim_done.set()

        async def sibling() -> None:
            sibling_results.append(text_of(await runtime.call_tool("fx", "slow", {"seconds": 0.5})))

        scope = anyio.CancelScope()
        async with anyio.create_task_group() as group:
            group.start_soon(victim, scope)
            group.start_soon(sibling)
            group.start_soon(sibling)
            await anyio.sleep(0.2)
            scope.cancel()
            await victim_done.wait()
        assert scope.cancelled_caught
        assert sibling_results == ["slept 0.5", "slept 0.5"]
        assert runtime.snapshot("fx").state == "connected"
        assert text_of(await runtime.call_tool("fx", "echo", {"text": "still here"})) == "still here"
        assert await pid_of(runtime, "fx") == pid
    finally:
        await runtime.aclose()


async def test_cancelling_a_setup_waiter_does_not_disturb_the_shared_setup():
    runtime = McpRuntime({"fx": stdio("--start-delay", "0.5")})
    try:
        scope = anyio.CancelScope()
        states = []

        async def waiter(cancel_scope: anyio.CancelScope | None = None) -> None:
            if cancel_scope is None:
                states.append((await runtime.connect("fx")).state)
                return
            with cancel_scope:
                await runtime.connect("fx")

        async with anyio.create_task_group() as group:
            group.start_soon(waiter, scope)
            group.start_soon(waiter)
            group.start_soon(waiter)
            await anyio.sleep(0.1)
            scope.cancel()
        assert states == ["connected", "connected"]
        assert len(fixture_children()) == 1
    finally:
        await runtime.aclose()


async def test_closing_during_setup_rejects_every_waiter_and_orphans_no_process():
    runtime = McpRuntime({"fx": stdio("--start-delay", "30")})
    errors: list[BaseException] = []

    async def waiter() -> None:
        try:
            await runtime.connect("fx")
        except ConnectFailed as exc:
            errors.append(exc)

    async with anyio.create_task_group() as group:
        for _ in range(3):
            group.start_soon(waiter)
        for _ in range(100):  # until the server process exists
            if fixture_children():
                break
            await anyio.sleep(0.05)
        assert len(fixture_children()) == 1
        await runtime.aclose()
    assert len(errors) == 3
    assert all("stopped by shutdown" in str(exc) for exc in errors)
    assert fixture_children() == []


async def test_setup_is_bounded_by_the_request_timeout_and_latches():
    runtime = McpRuntime({"fx": stdio("--start-delay", "30", requestTimeoutMs=400)})
    try:
        with pytest.raises(RequestTimedOut, match="did not finish setup within 400 ms"):
            await runtime.connect("fx")
        assert fixture_children() == []
        snapshot = runtime.snapshot("fx")
        assert snapshot.state == "failed"
        with pytest.raises(RequestTimedOut) as again:
            await runtime.call_tool("fx", "echo", {"text": "x"})
        assert again.value is snapshot.error  # latched: no second setup was attempted
        assert fixture_children() == []
    finally:
        await runtime.aclose()


async def test_failed_start_is_classified_latched_and_cleared_only_by_reconnect():
    runtime = McpRuntime({"bad": stdio("--fail-start")})
    try:
        with pytest.raises(ConnectFailed) as first:
            await runtime.connect("bad")
        message = str(first.value)
        assert "closed the connection during setup" in message
        assert "configuration broken" not in message  # stderr is classified, never echoed
        with pytest.raises(ConnectFailed) as second:
            await runtime.connect("bad")
        assert second.value is first.value
        assert (await runtime.disconnect("bad")).error is first.value  # a disconnect keeps the latch
        with pytest.raises(ConnectFailed) as still:
            await runtime.connect("bad")
        assert still.value is first.value
        assert (await runtime.reconnect("bad")).state == "idle"
        with pytest.raises(ConnectFailed) as third:
            await runtime.connect("bad")
        assert third.value is not first.value  # reconnect reset the latch: a new setup ran
    finally:
        await runtime.aclose()
    assert fixture_children() == []


async def test_missing_command_gives_a_clear_error():
    runtime = McpRuntime({"nope": stdio(command="/nonexistent/dir/mcp-server-xyz")})
    with pytest.raises(ConnectFailed, match="command not found: 'mcp-server-xyz'") as caught:
        await runtime.connect("nope")
    assert "/nonexistent" not in str(caught.value)
    await runtime.aclose()


async def test_unknown_and_disabled_servers():
    runtime = McpRuntime({"fx": stdio(), "off": stdio(disabled=True)})
    with pytest.raises(ServerNotFound, match="unknown MCP server 'ghost' \\(known: fx, off\\)"):
        await runtime.connect("ghost")
    with pytest.raises(ServerDisabled, match="'off' is disabled"):
        await runtime.call_tool("off", "echo", {"text": "x"})
    assert fixture_children() == []
    await runtime.aclose()


async def test_pinned_modern_client_rejects_a_legacy_only_server(web):
    runtime = McpRuntime({"old": stdio("--legacy-only", protocolVersion="2026-07-28"),
                          "new": web.config(protocolVersion="2026-07-28")})
    try:
        with pytest.raises(ConnectFailed, match="does not support protocol 2026-07-28"):
            await runtime.connect("old")
        assert runtime.snapshot("old").protocol_version is None  # no downgrade happened
        assert (await runtime.connect("new")).protocol_version == "2026-07-28"
    finally:
        await runtime.aclose()
    assert fixture_children() == []


async def test_auto_falls_back_to_legacy_and_legacy_forces_the_handshake(web):
    runtime = McpRuntime({"old": stdio("--legacy-only"), "forced": web.config(protocolVersion="legacy")})
    try:
        old = await runtime.connect("old")
        assert old.protocol_version == "2025-06-18" and old.server_name == "hostlink-legacy-fixture"
        assert text_of(await runtime.call_tool("old", "echo", {"text": "legacy ok"})) == "legacy ok"
        assert [tool.name for tool in await runtime.list_tools("old")] == ["echo"]
        forced = await runtime.connect("forced")
        assert forced.protocol_version != "2026-07-28" and forced.protocol_version.startswith("2025-")
    finally:
        await runtime.aclose()


async def test_crash_mid_call_gives_clear_error_then_reconnect_works():
    runtime = McpRuntime({"fx": stdio()})
    try:
        first_pid = await pid_of(runtime, "fx")
        with pytest.raises(ConnectFailed) as crashed:
            await runtime.call_tool("fx", "crash", {})
        message = str(crashed.value)
        assert "closed the connection during the call of tool 'crash'" in message
        assert "use reconnect" in message and "crashing on purpose" not in message
        assert runtime.snapshot("fx").state == "failed"
        with pytest.raises(ConnectFailed) as latched:
            await runtime.call_tool("fx", "echo", {"text": "x"})
        assert latched.value is crashed.value
        await runtime.reconnect("fx")
        assert text_of(await runtime.call_tool("fx", "echo", {"text": "back"})) == "back"
        assert await pid_of(runtime, "fx") != first_pid
        assert not alive(first_pid)
    finally:
        await runtime.aclose()
    assert fixture_children() == []


async def test_calls_in_flight_when_the_server_crashes_all_get_the_one_latched_error():
    runtime = McpRuntime({"fx": stdio()})
    failures: list[BaseException] = []

    async def call(tool: str) -> None:
        try:
            await runtime.call_tool("fx", tool, {})
        except ConnectFailed as failed:
            failures.append(failed)

    try:
        await runtime.connect("fx")
        async with anyio.create_task_group() as group:
            group.start_soon(call, "hang")
            await anyio.lowlevel.checkpoint()  # the hang is sent before the crash
            group.start_soon(call, "crash")
        assert len(failures) == 2 and failures[0] is failures[1]  # one crash, one error for every caller
        assert "closed the connection during the call of tool" in str(failures[0])
        assert runtime.snapshot("fx").error is failures[0]
    finally:
        await runtime.aclose()
    assert fixture_children() == []


async def test_a_legacy_servers_log_messages_reach_a_call_at_the_level_its_host_wants(web):
    """On a handshake-era session the server sends what it likes: the level is applied here."""
    from hostlink.host.progress import CallWatch, watching

    runtime = McpRuntime({"fx": web.config(protocolVersion="legacy")})
    try:
        heard: dict[str, list[str]] = {"debug": [], "warning": []}
        for level, levels in heard.items():
            with watching(CallWatch(log=lambda _server, said, _logger, _data, levels=levels: levels.append(said),
                                    log_level=level)):
                assert text_of(await runtime.call_tool("fx", "logs", {})) == "logged"
        assert heard == {"debug": ["debug", "info", "warning", "error"], "warning": ["warning", "error"]}
    finally:
        await runtime.aclose()


@pytest.mark.parametrize("close", ["disconnect", "reconnect", "aclose"])
async def test_a_call_in_flight_when_hostlink_closes_the_connection_is_not_blamed_on_the_server(close, web):
    """Before, such a call read 'MCP server 'fx' rejected the call of tool …: Connection closed'."""
    from hostlink.host.progress import CallWatch, watching

    runtime = McpRuntime({"fx": web.config()})
    running, failures = anyio.Event(), []

    async def call() -> None:
        with watching(CallWatch(listener=lambda *_: running.set())):
            try:
                await runtime.call_tool("fx", "progress", {"steps": 100, "pause": 0.3})
            except ConnectFailed as failed:
                failures.append(failed)

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(call)
            await running.wait()  # the server reported progress: the call is in flight there
            await getattr(runtime, close)(*(["fx"] if close != "aclose" else []))
        assert [str(failed) for failed in failures] == [
            "the call of tool 'progress' on MCP server 'fx' was stopped by a disconnect, reconnect or shutdown"]
        if close != "aclose":
            assert runtime.snapshot("fx").state == "idle"  # nothing latched: the next use connects
            assert text_of(await runtime.call_tool("fx", "echo", {"text": "again"})) == "again"
    finally:
        await runtime.aclose()


async def test_hang_past_timeout_gives_clear_error_and_connection_stays_usable():
    """Over stdio: the child still busy with the hung call is stopped by the reconnect and the close."""
    runtime = McpRuntime({"fx": stdio(toolTimeoutMs=2000)})  # the call's bound alone, apart from the setup's
    try:
        with pytest.raises(RequestTimedOut, match="did not answer the call of tool 'hang' within 2000 ms"):
            await runtime.call_tool("fx", "hang", {})
        assert text_of(await runtime.call_tool("fx", "echo", {"text": "alive"})) == "alive"
        await runtime.reconnect("fx")
        assert text_of(await runtime.call_tool("fx", "echo", {"text": "fresh"})) == "fresh"
    finally:
        await runtime.aclose()
    assert fixture_children() == []


async def test_disconnect_closes_and_next_use_connects_again():
    runtime = McpRuntime({"fx": stdio()})
    try:
        assert (await runtime.disconnect("fx")).state == "idle" and fixture_children() == []  # never connected
        pid = await pid_of(runtime, "fx")
        assert (await runtime.disconnect("fx")).state == "idle"
        assert not alive(pid)
        assert await pid_of(runtime, "fx") != pid
    finally:
        await runtime.aclose()


async def test_concurrent_tool_listings_are_coalesced_over_http(web):
    runtime = McpRuntime({"web": web.config()})
    try:
        await runtime.connect("web")
        before = web.count("/mcp")
        listings = []

        async def one() -> None:
            listings.append(await runtime.list_tools("web"))

        async with anyio.create_task_group() as group:
            for _ in range(10):
                group.start_soon(one)
        assert web.count("/mcp") - before == 1  # one tools/list POST for ten callers
        assert all(listing is listings[0] for listing in listings)
        assert "echo" in [tool.name for tool in listings[0]]
    finally:
        await runtime.aclose()


async def test_cancelling_one_listing_waiter_leaves_the_shared_listing(web):
    runtime = McpRuntime({"fx": web.config()})
    try:
        await runtime.connect("fx")
        scope = anyio.CancelScope()
        got = []

        async def cancelled() -> None:
            with scope:
                await runtime.list_tools("fx")

        async def kept() -> None:
            got.append(await runtime.list_tools("fx"))

        async with anyio.create_task_group() as group:
            group.start_soon(cancelled)
            group.start_soon(kept)
            await anyio.lowlevel.checkpoint()
            scope.cancel()
        assert len(got) == 1 and len(got[0]) > 5
    finally:
        await runtime.aclose()


async def test_http_call_works(web):
    runtime = McpRuntime({"web": web.config()})
    try:
        assert text_of(await runtime.call_tool("web", "echo", {"text": "over http"})) == "over http"
        assert runtime.snapshot("web").transport == "http"
    finally:
        await runtime.aclose()


@pytest.mark.parametrize(("status", "error", "phrase"), [
    (401, AuthRequired, 'requires authentication (HTTP 401), but no "auth" is configured for it'),
    (403, AuthError, "refused access (HTTP 403)"),
    (503, ConnectFailed, "unavailable (HTTP 503)"),
])
@pytest.mark.parametrize("mode", ["auto", "legacy", "2026-07-28"])
async def test_http_error_statuses_cause_no_retry_storm(web, status, error, phrase, mode):
    path = f"/status/{status}/{mode}/mcp"
    runtime = McpRuntime({"web": web.config(path, protocolVersion=mode)})
    try:
        for _ in range(5):
            with pytest.raises(error, match=re.escape(phrase)):
                await runtime.call_tool("web", "echo", {"text": "x"})
        # auto probes server/discover, then tries the initialize handshake: two requests at most,
        # and the latched failure sends nothing more however often it is asked.
        assert web.count(path) <= (2 if mode == "auto" else 1)
    finally:
        await runtime.aclose()


@pytest.mark.parametrize(("status", "phrase"), [
    (404, "has no MCP endpoint at its URL (HTTP 404)"),  # a wrong path in the URL
    (400, "refused setup: Server returned an error response"),
])
async def test_http_statuses_that_ask_no_credentials_are_named_once(web, status, phrase):
    path = f"/status/{status}/named-once/mcp"
    runtime = McpRuntime({"web": web.config(path)})
    try:
        for _ in range(2):
            with pytest.raises(ConnectFailed, match=re.escape(f"MCP server 'web' {phrase}")):
                await runtime.connect("web")
        assert web.count(path) == 2  # the probe and the legacy handshake, then the failure is latched
    finally:
        await runtime.aclose()


async def test_an_http_server_gone_mid_call_latches_a_clear_error():
    with http_fixture() as server:
        runtime = McpRuntime({"web": server.config()})
        try:
            await runtime.connect("web")
            before = await anyio.to_thread.run_sync(server.count)

            async def kill_once_the_call_arrived() -> None:
                while await anyio.to_thread.run_sync(server.count) == before:
                    await anyio.sleep(0.02)
                server.process.kill()

            async with anyio.create_task_group() as group:
                group.start_soon(kill_once_the_call_arrived)
                with pytest.raises(ConnectFailed) as lost:
                    await runtime.call_tool("web", "hang", {})
            assert str(lost.value) == ("MCP server 'web' closed the connection during the call of tool 'hang'; "
                                       "use reconnect to start it again")
            assert runtime.snapshot("web").state == "failed"
        finally:
            await runtime.aclose()


async def test_http_auth_without_auth_support_is_a_clear_auth_required():
    server = parse_server({"url": "http://127.0.0.1:9/mcp", "auth": "bearer", "bearerTokenEnv": "SOME_TOKEN"})
    runtime = McpRuntime({"web": server})
    with pytest.raises(AuthRequired, match="authentication support is not configured"):
        await runtime.connect("web")
    await runtime.aclose()


async def test_unreachable_http_server():
    runtime = McpRuntime({"web": parse_server({"url": "http://127.0.0.1:9/mcp", "requestTimeoutMs": 5000})})
    with pytest.raises(ConnectFailed, match="cannot be reached"):
        await runtime.connect("web")
    await runtime.aclose()


PROBE_INTOLERANT = """
import json, sys
first = True
for line in sys.stdin:
    msg = json.loads(line)
    if first and msg.get("method") != "initialize":
        sys.exit(1)  # an old server that dies on anything before initialize
    first = False
    if "id" not in msg:
        continue
    if msg["method"] == "initialize":
        result = {"protocolVersion": "2025-03-26", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "old-and-touchy", "version": "0"}}
    elif msg["method"] == "tools/list":
        result = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
    else:
        result = {"content": [{"type": "text", "text": "touchy ok"}]}
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"""


async def test_auto_retries_once_with_legacy_when_the_probe_kills_an_old_stdio_server(tmp_path):
    script = tmp_path / "touchy.py"
    script.write_text(PROBE_INTOLERANT)
    runtime = McpRuntime({"old": parse_server({"command": sys.executable, "args": [str(script)]})})
    try:
        snapshot = await runtime.connect("old")
        assert (snapshot.protocol_version, snapshot.server_name) == ("2025-03-26", "old-and-touchy")
        assert text_of(await runtime.call_tool("old", "echo", {})) == "touchy ok"
    finally:
        await runtime.aclose()


async def test_a_server_answering_the_handshake_in_a_version_no_client_speaks_fails_its_setup(tmp_path):
    script = tmp_path / "ancient.py"
    script.write_text(PROBE_INTOLERANT.replace('"2025-03-26"', '"2023-01-01"').replace("old-and-touchy", "ancient"))
    runtime = McpRuntime({"old": parse_server({"command": sys.executable, "args": [str(script)]})})
    try:
        with pytest.raises(ConnectFailed) as failed:
            await runtime.connect("old")
        assert str(failed.value).startswith("MCP server 'old' setup failed (RuntimeError)")  # never the SDK's text
        assert "2023-01-01" not in str(failed.value) and runtime.snapshot("old").state == "failed"
    finally:
        await runtime.aclose()


async def test_disconnect_during_setup_returns_to_idle():
    runtime = McpRuntime({"fx": stdio("--start-delay", "30")})
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: _swallow(runtime.connect("fx")))
            for _ in range(100):
                if fixture_children():
                    break
                await anyio.sleep(0.05)
            assert (await runtime.disconnect("fx")).state == "idle"
        assert fixture_children() == []
    finally:
        await runtime.aclose()


async def _swallow(awaitable) -> None:
    try:
        await awaitable
    except ConnectFailed:
        pass


NOISY_CRASH = """
import sys
sys.stderr.write("\\x1b]0;pwned\\x07 secret-token-123 " * 20000)
sys.stderr.write("Traceback (most recent call last):\\n  boom\\nValueError: bad\\n")
sys.exit(1)
"""


async def test_stderr_is_a_bounded_classified_tail_never_echoed(tmp_path):
    script = tmp_path / "noisy.py"
    script.write_text(NOISY_CRASH)
    runtime = McpRuntime({"noisy": parse_server({"command": sys.executable, "args": [str(script)]})})
    try:
        with pytest.raises(ConnectFailed) as caught:
            await runtime.connect("noisy")
        message = str(caught.value)
        assert message.endswith("closed the connection during setup: the server crashed "
                                "(it reported an error on stderr)")
        assert "secret-token" not in message and "\x1b" not in message
        tail = runtime._conns["noisy"].transport.stderr.data
        assert len(tail) <= 8192 and tail.endswith(b"ValueError: bad\n")
    finally:
        await runtime.aclose()


async def test_a_command_the_system_cannot_run_is_a_clear_error(tmp_path):
    program = tmp_path / "not-a-program"
    program.write_bytes(b"\x7fELF\x00 not really")  # executable, but in no format the system runs
    program.chmod(0o755)
    runtime = McpRuntime({"x": parse_server({"command": str(program)})})
    with pytest.raises(ConnectFailed, match=re.escape("MCP server 'x' could not be started (OSError)")):
        await runtime.connect("x")
    await runtime.aclose()


async def test_a_command_this_system_refuses_to_start_names_why(monkeypatch):
    """Windows refuses a batch file whose arguments cmd.exe would interpret (see
    hostlink.host.platform.commands); the refusal reaches the person as it was worded."""
    from hostlink.host.platform.commands import CommandRefused
    from hostlink.mcp.transports import stdio_pipes

    def refuse(command, args, environ):
        raise CommandRefused("argument 1 holds characters cmd.exe would interpret when it runs a batch file: &")

    monkeypatch.setattr(stdio_pipes, "resolve", refuse)
    runtime = McpRuntime({"x": stdio()})
    with pytest.raises(ConnectFailed) as refused:
        await runtime.connect("x")
    assert str(refused.value) == ("MCP server 'x': argument 1 holds characters cmd.exe would interpret when it "
                                  "runs a batch file: &")
    await runtime.aclose()
    assert fixture_children() == []


async def test_non_executable_command_is_permission_denied(tmp_path):
    script = tmp_path / "not-executable"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o644)
    runtime = McpRuntime({"x": parse_server({"command": str(script)})})
    with pytest.raises(ConnectFailed, match="permission denied running 'not-executable'"):
        await runtime.connect("x")
    await runtime.aclose()


async def test_bearer_credentials_reach_the_server_through_the_auth_hook():
    from hostlink.mcp.auth.manager import AuthManager

    with http_fixture("--require-bearer-env", "FX_TOKEN", env={**os.environ, "FX_TOKEN": "s3cret"}) as server:
        config = server.config(auth="bearer", bearerTokenEnv="FX_TOKEN")
        missing = McpRuntime({"web": config}, auth=AuthManager(environ={}))
        with pytest.raises(AuthRequired, match="FX_TOKEN") as caught:
            await missing.connect("web")
        assert "s3cret" not in str(caught.value)
        await missing.aclose()
        assert server.count() == 0  # missing credentials are found before connecting
        wrong = McpRuntime({"web": config}, auth=AuthManager(environ={"FX_TOKEN": "wrong"}))
        with pytest.raises(AuthError, match=re.escape("rejected the configured credentials (HTTP 401)")):
            await wrong.connect("web")
        await wrong.aclose()
        right = McpRuntime({"web": config}, auth=AuthManager(environ={"FX_TOKEN": "s3cret"}))
        try:
            assert text_of(await right.call_tool("web", "echo", {"text": "authorized"})) == "authorized"
        finally:
            await right.aclose()


async def test_connections_that_succeed_fail_or_time_out_leave_no_file_descriptor():
    async def cycle() -> None:
        runtime = McpRuntime({"ok": stdio(), "bad": stdio("--fail-start"),
                              "slow": stdio("--start-delay", "30", requestTimeoutMs=300)})
        await runtime.call_tool("ok", "echo", {"text": "x"})
        for name in ("bad", "slow"):
            with pytest.raises((ConnectFailed, RequestTimedOut)):
                await runtime.connect(name)
        await runtime.aclose()

    await cycle()  # warm up whatever the event loop and SDK open once
    gc.collect()  # earlier tests' garbage must not close its descriptors during the measured cycle
    before = sorted(os.listdir("/proc/self/fd"))
    await cycle()
    assert sorted(os.listdir("/proc/self/fd")) == before
    assert fixture_children() == []


ENDLESS_PAGES = """
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}, "resources": {}},
                  "serverInfo": {"name": "endless", "version": "0"}}
    elif msg["method"] == "tools/list":
        page = int((msg.get("params") or {}).get("cursor") or 0)
        result = {"tools": [{"name": f"t{page}", "inputSchema": {"type": "object"}}], "nextCursor": str(page + 1)}
    elif msg["method"] == "resources/list":
        page = int((msg.get("params") or {}).get("cursor") or 0)
        result = {"resources": [{"uri": f"endless://{page}", "name": f"r{page}"}], "nextCursor": str(page + 1)}
    else:
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no"}}), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"""


async def test_tool_listing_pagination_is_capped(tmp_path):
    script = tmp_path / "endless.py"
    script.write_text(ENDLESS_PAGES)
    runtime = McpRuntime({"endless": parse_server({"command": sys.executable, "args": [str(script)]})})
    try:
        with pytest.raises(CallFailed, match="listed more than 50 pages of tools"):
            await runtime.list_tools("endless")
        asked: list[str | None] = []

        def resources_page(cursor: str | None):
            asked.append(cursor)
            return runtime.list_resources("endless", cursor)

        with pytest.raises(CallFailed) as capped:
            await every_page(resources_page, "endless", "resources")
        assert str(capped.value) == "MCP server 'endless' listed more than 50 pages of resources"
        assert asked == [None, *(str(page) for page in range(1, 50))]  # fifty pages asked, no more
        assert runtime.snapshot("endless").state == "connected"  # the connection itself is fine
    finally:
        await runtime.aclose()
