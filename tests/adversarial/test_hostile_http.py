"""Hostile HTTP servers: cleartext or foreign OAuth endpoints named by metadata, decompression bombs.

Every attack runs against `hostile_http.py` on 127.0.0.1. The OAuth attacks assert that
nothing was sent where the metadata pointed (the server counts such requests: `0.0.0.0`
and `localhost` reach the same process); the bombs run the real `hostlink` CLI in a
child process and assert its peak memory, its one-line error and that nothing leaks.
"""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest

from adversarial.support import assert_contained, run_cli
from mcp_auth_support import http_server

HERE = Path(__file__).parent
pytestmark = pytest.mark.usefixtures("no_browser", "isolated_state")


def forbidden_requests(base: str) -> dict[str, int]:
    return httpx2.get(f"{base}/_counters").json()


# --- OAuth endpoints named by hostile metadata --------------------------------------------


async def sign_in_error(url: str, **oauth) -> str:
    from hostlink.mcp.auth.manager import AuthManager
    from hostlink.mcp.errors import AuthError

    server = http_server(url, auth="oauth", **({"oauth": oauth} if oauth else {}))
    manager = AuthManager()
    try:
        with pytest.raises(AuthError) as raised:
            await manager.start_login("hostile", server)
        return str(raised.value)
    finally:
        await manager.aclose()


@pytest.mark.anyio
async def test_a_cleartext_authorization_server_is_never_contacted(hostile, keyring_required):
    message = await sign_in_error(f"{hostile}/cleartext-as/mcp")
    assert "refused before it was sent" in message and "use https" in message
    assert "0.0.0.0" not in message
    assert forbidden_requests(hostile) == {}


@pytest.mark.anyio
async def test_resource_metadata_on_another_origin_is_refused(hostile, keyring_required):
    message = await sign_in_error(f"{hostile}/foreign-prm/mcp")
    assert "another origin" in message
    assert forbidden_requests(hostile) == {}


@pytest.mark.anyio
async def test_cleartext_registration_and_token_endpoints_get_nothing(hostile, keyring_required):
    message = await sign_in_error(f"{hostile}/cleartext-endpoints/mcp")
    assert "refused before it was sent" in message
    assert forbidden_requests(hostile) == {}


@pytest.mark.anyio
async def test_a_cleartext_authorization_link_is_never_handed_out(hostile, keyring_required):
    # A pre-registered client skips registration: the next step would be the link itself.
    message = await sign_in_error(f"{hostile}/cleartext-endpoints/mcp", clientId="preregistered")
    assert "sign-in link was refused" in message and "use https" in message
    assert forbidden_requests(hostile) == {}


@pytest.mark.anyio
async def test_authorization_server_metadata_bomb_is_refused_at_1_mib(hostile, keyring_required):
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    message = await sign_in_error(f"{hostile}/bomb-as/mcp")
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert "exceeded 1 MiB once decoded" in message
    assert grown_mib < 100, f"the test process grew by {grown_mib:.0f} MiB"


# --- decompression bombs against the CLI -------------------------------------------------


def bomb_servers(hostile: str) -> dict:
    return {name: {"url": f"{hostile}/{name}/mcp", "protocolVersion": "legacy"}
            for name in ("bomb-call", "bomb-init", "bomb-sse")}


@pytest.mark.parametrize(("argv", "expected"), [
    (("call", "bomb-call", "boom"), "the call of tool 'boom' failed: a response exceeded 32 MiB once decoded"),
    (("connect", "bomb-init"), "setup failed: a response exceeded 32 MiB once decoded"),
    (("call", "bomb-sse", "boom"), "MCP server 'bomb-sse'"),
])
def test_a_decompression_bomb_is_refused_with_memory_bounded(tmp_path, hostile, argv, expected):
    run = run_cli(tmp_path, bomb_servers(hostile), "mcp", *argv)
    assert run.code == 3, (run.out, run.err)  # connection or server
    assert expected in run.err and len(run.err) < 2000
    assert_contained(run)


@pytest.mark.anyio
async def test_after_a_bomb_the_connection_keeps_serving(hostile):
    from hostlink.mcp.errors import CallFailed
    from hostlink.mcp.runtime.clients import McpRuntime

    server = http_server(f"{hostile}/bomb-call/mcp", protocolVersion="legacy")
    runtime = McpRuntime({"bomb": server})
    try:
        with pytest.raises(CallFailed, match="exceeded 32 MiB once decoded"):
            await runtime.call_tool("bomb", "boom", {})
        result = await runtime.call_tool("bomb", "ok", {})
        assert result.content[0].text == "still here"
        assert runtime.snapshot("bomb").state == "connected"
    finally:
        await runtime.aclose()
