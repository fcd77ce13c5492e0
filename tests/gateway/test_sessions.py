"""Several MCP hosts on one `hostlink mcp serve --http`, each an SDK client on real HTTP: a
server's `roots/list` goes to the host whose call is with that server and to no other (to
none when calls of two hosts are with it); every host hears that the lists changed; the
capabilities announced are those of stdio; at the bound on sessions the least recently used
idle one makes room, and only busy sessions make a newcomer wait (503).

The tests of the proxy face share one module-scoped gateway (`shared`), each with hosts and
sessions of its own; the tools face's reload and sign-in each have a gateway of their own."""

from __future__ import annotations

import json
import sys
import time
from contextlib import AsyncExitStack

import anyio
import httpx2
import pytest

from gateway_support import ROOT, demo, fixture, http_gateway, http_host
from mcp_runtime_support import ASKER

pytestmark = pytest.mark.anyio
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
ACCEPT = {"Accept": "application/json, text/event-stream"}


def servers() -> dict:
    asking = {"command": sys.executable, "args": [ASKER], "protocolVersion": "legacy", "roots": True}
    return {"asker": asking, "fx": {**fixture(), "protocolVersion": "legacy"}}


@pytest.fixture(scope="module")
def shared_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("shared")


@pytest.fixture(scope="module")
def shared(shared_dir):
    """One proxy-face gateway of `servers()` for the tests that only ask it, or fill the bound
    on sessions anew: whatever sessions another test left idle are ended to make room before
    they count."""
    with http_gateway(shared_dir, servers()) as gateway:
        yield gateway


class Roots:
    """Each host's own roots, and how often each was asked."""

    def __init__(self) -> None:
        self.asked: dict[str, int] = {}

    def of(self, host: str):
        import mcp_types

        self.asked[host] = 0

        async def roots(context):
            self.asked[host] += 1
            return mcp_types.ListRootsResult(roots=[mcp_types.Root(uri=f"file:///work/project-{host}", name=host)])

        return roots


def roots_after(seconds: float) -> dict:
    return {"action": "call", "server": "asker", "tool": "roots_after", "args": {"seconds": seconds}}


async def test_roots_come_from_the_host_whose_call_asks_while_another_host_calls(shared):
    roots, answers = Roots(), {}
    async with (http_host(shared, list_roots_callback=roots.of("a")) as a,
                http_host(shared, list_roots_callback=roots.of("b")) as b):

        async def call_a() -> None:
            answers["a"] = await a.call_tool("mcp", roots_after(2))

        async with anyio.create_task_group() as group:
            group.start_soon(call_a)
            await anyio.sleep(0.3)  # then b's call, the newer one, is in flight while asker asks a's roots
            await b.call_tool("mcp", {"action": "call", "server": "fx", "tool": "slow", "args": {"seconds": 6}})
    assert json.loads(answers["a"].content[0].text) == {"roots": ["file:///work/project-a"]}
    assert roots.asked == {"a": 1, "b": 0}
    err = shared.stderr.read_bytes()  # since it started, whatever the tests before it asked
    assert b"Warning" not in err and str(ROOT).encode() not in err, err[-2000:]  # no SDK warning, no path


async def test_a_request_of_a_server_two_hosts_are_calling_goes_to_neither(shared):
    roots, answers = Roots(), {}
    async with (http_host(shared, list_roots_callback=roots.of("a")) as a,
                http_host(shared, list_roots_callback=roots.of("b")) as b):

        async def call(name: str, host) -> None:  # each asks while both calls are open, however slow the machine
            answers[name] = await host.call_tool("mcp", {"action": "call", "server": "asker", "tool": "roots_together"})

        async with anyio.create_task_group() as group:
            group.start_soon(call, "a", a)
            group.start_soon(call, "b", b)
    assert roots.asked == {"a": 0, "b": 0}  # nothing tells which host a roots/list belongs to: none is asked
    for answer in answers.values():  # the gateway's own roots: none, its project is not trusted
        assert json.loads(answer.content[0].text) == {"roots": []}


async def test_every_host_hears_that_the_lists_changed_with_the_capabilities_of_stdio(tmp_path, web):
    heard: dict[str, set[str]] = {"a": set(), "b": set()}

    def listening(host: str):
        async def on_message(message) -> None:
            method = getattr(message, "method", None)
            if isinstance(method, str) and method.endswith("/list_changed"):
                heard[host].add(method)

        return on_message

    everyone = {"notifications/tools/list_changed", "notifications/resources/list_changed",
                "notifications/prompts/list_changed"}
    with http_gateway(tmp_path, {"fx": {"url": web.url}}, "--expose", "tools") as gateway:
        async with (http_host(gateway, message_handler=listening("a")) as a,
                    http_host(gateway, message_handler=listening("b")) as b):
            capabilities = a.server_capabilities
            assert capabilities.tools.list_changed is True
            assert capabilities.resources.list_changed is True and capabilities.prompts.list_changed is True
            before = {tool.name for tool in (await a.list_tools()).tools}
            await b.list_tools()
            time.sleep(0.01)
            config = tmp_path / "config" / "mcp" / "mcp.json"
            config.write_text(json.dumps({"mcpServers": {"fx": {"url": web.url}, "other": {"url": web.url}}}))
            after = {tool.name for tool in (await a.list_tools()).tools}  # a's request finds the change
            with anyio.fail_after(10):
                while heard != {"a": everyone, "b": everyone}:
                    await anyio.sleep(0.05)
    assert "other__echo" not in before and "other__echo" in after


PING = {"jsonrpc": "2.0", "id": 2, "method": "ping"}


def in_session(session: str) -> dict[str, str]:
    return {"mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}


async def test_sessions_never_closed_by_one_client_leave_room_for_another(shared):
    """1,000 sessions opened and never closed: each newcomer past the bound ends the least
    recently used idle one, whose host then gets 404; another host opens a session and calls
    a tool at once."""
    from hostlink.gateway.http import MAX_SESSIONS

    start = shared.stderr.stat().st_size
    async with httpx2.AsyncClient(headers={**shared.headers, **ACCEPT}, timeout=30) as http:
        sessions = []
        for _ in range(1000):
            opened = await http.post(shared.url, json=INIT)
            assert opened.status_code == 200, opened.text
            sessions.append(opened.headers["mcp-session-id"])
        gone = await http.post(shared.url, json=PING, headers=in_session(sessions[-MAX_SESSIONS - 1]))
        assert gone.status_code == 404 and gone.json()["error"]["message"] == "Session not found"
        kept = await http.post(shared.url, json=PING, headers=in_session(sessions[-MAX_SESSIONS]))
        assert kept.status_code == 200
        with anyio.fail_after(20):  # at once: no wait for an idle timeout (15 minutes)
            async with http_host(shared) as other:
                echoed = await other.call_tool("mcp", {"action": "call", "server": "fx", "tool": "echo",
                                                       "args": {"text": "room"}})
        assert echoed.content[0].text == "room"
    said = shared.stderr.read_bytes()[start:].decode()  # what it said since this test began
    assert said.count("the least recently used idle one ended to make room") >= 1000 - MAX_SESSIONS, said[-2000:]


async def test_only_when_every_session_is_busy_does_a_newcomer_get_503(shared):
    """A session with its GET stream open is busy: never ended to make room."""
    from hostlink.gateway.http import MAX_SESSIONS

    limits = httpx2.Limits(max_connections=MAX_SESSIONS + 10, max_keepalive_connections=MAX_SESSIONS + 10)
    async with httpx2.AsyncClient(headers={**shared.headers, **ACCEPT}, timeout=30, limits=limits) as http:
        sessions = [(await http.post(shared.url, json=INIT)).headers["mcp-session-id"]
                    for _ in range(MAX_SESSIONS)]
        streaming = {session: anyio.Event() for session in sessions}
        stop = {session: anyio.Event() for session in sessions}

        async def hold(session: str) -> None:
            async with http.stream("GET", shared.url, headers=in_session(session)) as stream:
                assert stream.status_code == 200
                streaming[session].set()
                await stop[session].wait()

        async with anyio.create_task_group() as group:
            for session in sessions:
                group.start_soon(hold, session)
            with anyio.fail_after(30):
                for event in streaming.values():
                    await event.wait()
            refused = await http.post(shared.url, json=INIT)
            assert refused.status_code == 503
            assert refused.json()["jsonrpc"] == "2.0" and "sessions" in refused.json()["error"]["message"]
            stop[sessions[7]].set()  # that host closes its stream: its session is idle now
            with anyio.fail_after(10):
                while (await http.post(shared.url, json=INIT)).status_code != 200:
                    await anyio.sleep(0.05)
            assert (await http.post(shared.url, json=PING, headers=in_session(sessions[7]))).status_code == 404
            assert (await http.post(shared.url, json=PING, headers=in_session(sessions[8]))).status_code == 200
            for event in stop.values():
                event.set()


async def test_list_changed_after_a_reload_reaches_every_open_session(shared, shared_dir):
    """Every session open when the configuration changes hears it, however many. The server it
    adds is its own, and the configuration is put back after."""
    count, heard = 12, []

    def listening(index: int):
        heard.append(anyio.Event())

        async def on_message(message) -> None:
            if getattr(message, "method", None) == "notifications/tools/list_changed":
                heard[index].set()

        return on_message

    config = shared_dir / "config" / "mcp" / "mcp.json"
    try:
        async with AsyncExitStack() as hosts:
            for index in range(count):
                await hosts.enter_async_context(http_host(shared, message_handler=listening(index)))
            await anyio.sleep(0.3)
            config.write_text(json.dumps({"mcpServers": {**servers(), "reloaded": demo()}}))
            with anyio.fail_after(10):
                for event in heard:
                    await event.wait()
    finally:
        config.write_text(json.dumps({"mcpServers": servers()}))


@pytest.mark.usefixtures("no_browser", "isolated_state")
async def test_every_host_hears_that_a_sign_in_changed_the_tools(tmp_path, fake_oauth, keyring_required):
    import mcp_types

    from mcp_auth_support import follow_link

    offered, heard = [], {"a": anyio.Event(), "b": anyio.Event()}

    async def elicit(context, params):
        offered.append(params)
        return mcp_types.ElicitResult(action="accept")

    def listening(host: str):
        async def on_message(message) -> None:
            if getattr(message, "method", None) == "notifications/tools/list_changed":
                heard[host].set()

        return on_message

    servers = {"web": {"url": fake_oauth.mcp, "auth": "oauth"}}
    # in a folder of its own: the fake authorization server, which lives on, has tmp_path in its PATH
    with http_gateway(tmp_path / "gateway", servers, "--expose", "tools") as gateway:
        async with (http_host(gateway, elicitation_callback=elicit, message_handler=listening("a")) as a,
                    http_host(gateway, elicitation_callback=elicit, message_handler=listening("b")) as b):
            assert [tool.name for tool in (await a.list_tools()).tools] == ["web__sign_in"]
            started = await a.call_tool("web__sign_in", {})
            await b.list_tools()  # b's request is the latest when the sign-in ends
            (params,) = offered  # the link went to a, whose call started the sign-in, and only there
            assert params.url in started.content[0].text
            assert (await follow_link(params.url)).status_code == 200
            with anyio.fail_after(30):
                await heard["a"].wait()
                await heard["b"].wait()
            assert "web__whoami" in {tool.name for tool in (await b.list_tools()).tools}
