"""MCP authentication against a fake OAuth server and a real keyring (scripts/with-keyring).

Everything runs over real HTTP on 127.0.0.1: the SDK OAuth client, the loopback callback
receiver, the fake authorization server and an SDK MCP server that requires its tokens.
"""

from __future__ import annotations

import asyncio
import sys
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import anyio
import httpx2
import pytest

from hostlink.mcp.auth.manager import AuthManager
from hostlink.mcp.auth.store import SecureStore, record_key
from hostlink.mcp.errors import AuthError, AuthRequired, McpError
from hostlink.mcp.runtime.clients import McpRuntime
from mcp_auth_support import FAKES, follow_link, http_server, sign_in
from process_support import started

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("keyring_required", "no_browser", "isolated_state")]


async def whoami(runtime: McpRuntime, name: str) -> str:
    result = await runtime.call_tool(name, "whoami", {})
    return result.content[0].text


def replace_query(url: str, **changes) -> str:
    parts = urlsplit(url)
    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
    query.update(changes)
    return urlunsplit(parts._replace(query=urlencode(query)))


# --- bearer and machine OAuth ------------------------------------------------------------------


async def test_bearer_token_comes_from_the_named_variable():
    import subprocess

    with started([sys.executable, str(FAKES / "mcp_fixture_server.py"), "--http",
                  "--require-bearer-env", "FIXTURE_TOKEN"], stdout=subprocess.PIPE, text=True,
                 env={"FIXTURE_TOKEN": "s3cret-value", "PATH": "/usr/bin:/bin"}) as proc:
        url = proc.stdout.readline().strip()
        server = http_server(url, auth="bearer", bearerTokenEnv="MY_TOKEN")
        with pytest.raises(AuthRequired) as raised:
            await AuthManager(environ={}).http_auth("b", server)
        assert "MY_TOKEN" in str(raised.value) and raised.value.link is None
        manager = AuthManager(environ={"MY_TOKEN": "s3cret-value"})
        assert await manager.credential_state("b", server) == "env set: MY_TOKEN"
        runtime = McpRuntime({"b": server}, auth=manager)
        try:
            result = await runtime.call_tool("b", "echo", {"text": "hi"})
            assert result.content[0].text == "hi"
        finally:
            await runtime.aclose()
        wrong = AuthManager(environ={"MY_TOKEN": "other"})
        assert "s3cret" not in str(await _error_of(wrong.http_auth("b", server.model_copy())))


async def _error_of(awaitable):
    try:
        await awaitable
    except Exception as error:  # noqa: BLE001 - the message is what is checked
        return error
    return None


async def test_client_credentials_use_memory_only(fake_oauth):
    server = http_server(fake_oauth.mcp, auth="oauth", oauth={
        "grantType": "client_credentials", "clientId": "machine", "clientSecretEnv": "M_SECRET",
        "issuer": fake_oauth.issuer})
    with pytest.raises(AuthRequired, match="M_SECRET"):
        await AuthManager(environ={}).http_auth("m", server)
    manager = AuthManager(environ={"M_SECRET": "machine-secret"})
    runtime = McpRuntime({"m": server}, auth=manager)
    try:
        assert await whoami(runtime, "m") == "client machine"
    finally:
        await runtime.aclose()
    counters = fake_oauth.counters()
    assert counters["token_client_credentials"] == 1
    assert counters["register"] == counters["authorize"] == 0
    assert await SecureStore().read_raw(record_key("m", server)) is None
    assert manager._hub.listening == 0
    await manager.aclose()


async def test_client_credentials_refuse_another_issuer(fake_oauth):
    server = http_server(fake_oauth.mcp, auth="oauth", oauth={
        "grantType": "client_credentials", "clientId": "machine", "clientSecretEnv": "M_SECRET",
        "issuer": "https://issuer.invalid"})
    runtime = McpRuntime({"m": server}, auth=AuthManager(environ={"M_SECRET": "machine-secret"}))
    try:
        with pytest.raises(McpError):
            await whoami(runtime, "m")
    finally:
        await runtime.aclose()
    assert fake_oauth.counters()["token_client_credentials"] == 0


# --- sign-in by link ---------------------------------------------------------------------------


async def test_link_callback_tokens_call_expiry_one_refresh(fake_oauth):
    fake_oauth.control(access_expires_in=5)  # inside the refresh margin: expired at once
    server = http_server(fake_oauth.mcp, auth="oauth")
    manager = AuthManager()
    runtime = McpRuntime({"s": server}, auth=manager)
    try:
        with pytest.raises(AuthRequired) as raised:
            await whoami(runtime, "s")
        link = raised.value.link
        assert link and link.startswith(fake_oauth.issuer + "/authorize?")
        assert "code_challenge_method=S256" in link
        assert await manager.credential_state("s", server) == "pending link"
        answer = await follow_link(link)
        assert answer.status_code == 200
        assert answer.text == "Signed in to MCP server 's'. You can close this tab.\n"  # after the exchange
        assert answer.headers["content-type"].startswith("text/plain")
        assert answer.headers["cache-control"] == "no-store"
        assert answer.headers["referrer-policy"] == "no-referrer"
        await manager.wait_login("s", server, 30)
        assert await manager.credential_state("s", server) == "refreshable"
        assert fake_oauth.counters()["token_code"] == 1
        await runtime.reconnect("s")
        assert (await whoami(runtime, "s")).startswith("client client-")
        assert fake_oauth.counters()["token_refresh"] == 1
        assert await manager.credential_state("s", server) == "signed in"
        await whoami(runtime, "s")
        await runtime.reconnect("s")
        await whoami(runtime, "s")
        assert fake_oauth.counters()["token_refresh"] == 1
        assert manager._hub.listening == 0
    finally:
        await runtime.aclose()
        await manager.aclose()
    # a new process (manager) uses the stored tokens without signing in again
    fresh = AuthManager()
    runtime = McpRuntime({"s": server}, auth=fresh)
    try:
        assert (await whoami(runtime, "s")).startswith("client client-")
    finally:
        await runtime.aclose()
    assert fake_oauth.counters()["authorize"] == 1


async def test_ten_concurrent_calls_share_one_link(fake_oauth):
    server = http_server(fake_oauth.mcp, auth="oauth")
    manager = AuthManager()
    links = []

    async def call():
        with pytest.raises(AuthRequired) as raised:
            await manager.http_auth("c", server)
        links.append(raised.value.link)

    async with anyio.create_task_group() as group:
        for _ in range(10):
            group.start_soon(call)
    assert len(links) == 10 and len(set(links)) == 1
    counters = fake_oauth.counters()
    assert counters["register"] == 1 and counters["metadata"] == 1
    assert await manager.start_login("c", server) == links[0]
    await manager.aclose()
    assert manager._hub.listening == 0


async def test_failed_start_latches_until_explicit_retry(fake_oauth, caplog):
    fake_oauth.control(metadata_issuer="http://127.0.0.1:9/elsewhere")
    server = http_server(fake_oauth.mcp, auth="oauth")
    manager = AuthManager()
    with pytest.raises(AuthError) as first:
        await manager.http_auth("f", server)
    assert not isinstance(first.value, AuthRequired)
    assert "issuer" in str(first.value)
    assert "elsewhere" not in caplog.text  # the SDK's log copy of the provider text is withheld
    seen = fake_oauth.counters()["metadata"]
    with pytest.raises(AuthError, match=r"authorization_failed.*hostlink mcp auth f"):
        await manager.http_auth("f", server)
    assert fake_oauth.counters()["metadata"] == seen
    assert await manager.credential_state("f", server) == "authorization failed"
    fake_oauth.control(metadata_issuer=None)
    with pytest.raises(AuthError, match=r"authorization_failed.*hostlink mcp auth f"):
        await manager.start_login("f", server, retry=False)  # only an explicit retry clears the latch
    assert fake_oauth.counters()["metadata"] == seen
    link = await manager.start_login("f", server)
    assert (await follow_link(link)).status_code == 200
    await manager.wait_login("f", server, 30)
    assert await manager.credential_state("f", server) == "signed in"
    await manager.aclose()


async def test_sign_in_advice_names_the_host_command(fake_oauth):
    fake_oauth.control(metadata_issuer="http://127.0.0.1:9/elsewhere")
    server = http_server(fake_oauth.mcp, auth="oauth")
    manager = AuthManager(command="llm")
    try:
        with pytest.raises(AuthError):
            await manager.http_auth("f", server)
        with pytest.raises(AuthError) as latched:
            await manager.http_auth("f", server)
        assert "`llm mcp auth f`" in str(latched.value) and "hostlink" not in str(latched.value)
        with pytest.raises(AuthRequired) as signed_out:
            await manager._access_token(record_key("f", server), "f", server, 0)
        assert "run `llm mcp auth f` to sign in" in str(signed_out.value)
    finally:
        fake_oauth.control(metadata_issuer=None)
        await manager.aclose()


async def test_configured_issuer_mismatch_refused_before_any_link(fake_oauth):
    server = http_server(fake_oauth.mcp, auth="oauth", oauth={"issuer": "http://127.0.0.1:9"})
    manager = AuthManager()
    with pytest.raises(AuthError, match="issuer"):
        await manager.http_auth("i", server)
    counters = fake_oauth.counters()
    assert counters["authorize"] == 0 and counters["token_code"] == 0
    assert await SecureStore().read_raw(record_key("i", server)) is None
    await manager.aclose()


async def test_callback_iss_mismatch_rejected_before_the_code_is_redeemed(fake_oauth):
    server = http_server(fake_oauth.mcp, auth="oauth")
    manager = AuthManager()
    with pytest.raises(AuthRequired) as raised:
        await manager.http_auth("r", server)
    answer = await follow_link(raised.value.link, tamper=lambda url: replace_query(url, iss="http://127.0.0.1:9"))
    assert answer.status_code == 200  # a valid callback for the flow: consumed, then refused
    with pytest.raises(AuthError):
        await manager.wait_login("r", server, 30)
    assert fake_oauth.counters()["token_code"] == 0
    assert await manager.credential_state("r", server) == "authorization failed"
    await manager.aclose()


async def test_bad_callbacks_do_not_consume_the_flow(fake_oauth):
    server = http_server(fake_oauth.mcp, auth="oauth")
    manager = AuthManager()
    with pytest.raises(AuthRequired) as raised:
        await manager.http_auth("k", server)
    async with httpx2.AsyncClient() as client:
        approval = await client.get(raised.value.link)
        good = approval.headers["location"]
        parts = urlsplit(good)
        state = parse_qs(parts.query)["state"][0]
        bad = [
            ("GET", replace_query(good, state="wrong"), {}),
            ("GET", replace_query(good, state=state[:-1]), {}),
            ("GET", good + "&state=" + state, {}),  # duplicate state
            ("GET", good.replace("/callback", "/other"), {}),
            ("GET", good, {"Host": "localhost:" + str(parts.port)}),
            ("GET", good, {"Origin": "https://evil.example"}),
            ("POST", good, {}),
            ("GET", good + "&pad=" + "x" * 5000, {}),
            ("GET", replace_query(good, code=""), {}),
        ]
        for method, url, headers in bad:
            response = await client.request(method, url, headers=headers)
            assert response.status_code == 400, (method, url[:80], headers)
            assert response.headers["cache-control"] == "no-store"
        assert await manager.credential_state("k", server) == "pending link"
        assert (await client.get(good)).status_code == 200
        await manager.wait_login("k", server, 30)
    assert fake_oauth.counters()["token_code"] == 1
    assert await manager.credential_state("k", server) == "signed in"
    assert manager._hub.listening == 0
    with pytest.raises(httpx2.ConnectError):
        httpx2.get(good)  # the listener closed with its last flow
    await manager.aclose()


async def test_one_listener_serves_flows_of_several_servers(fake_oauth):
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    one = http_server(fake_oauth.mcp, auth="oauth")
    two = http_server(fake_oauth.mcp, auth="oauth")
    fixed = http_server(fake_oauth.mcp, auth="oauth", oauth={"redirectUri": f"http://127.0.0.1:{port}/cb"})
    manager = AuthManager()
    links = {}
    for name, server in (("one", one), ("two", two), ("fixed", fixed)):
        with pytest.raises(AuthRequired) as raised:
            await manager.http_auth(name, server)
        links[name] = raised.value.link
    redirects = {parse_qs(urlsplit(links[name]).query)["redirect_uri"][0] for name in ("one", "two")}
    assert len(redirects) == 1 and manager._hub.listening == 2  # the shared one and the configured one
    assert (await follow_link(links["two"])).status_code == 200
    await manager.wait_login("two", two, 30)
    assert manager._hub.listening == 2
    assert (await follow_link(links["one"])).status_code == 200
    await manager.wait_login("one", one, 30)
    assert manager._hub.listening == 1  # the shared listener closed with its last flow; the other stays
    assert (await follow_link(links["fixed"])).status_code == 200
    await manager.wait_login("fixed", fixed, 30)
    assert manager._hub.listening == 0
    await manager.aclose()


async def test_failed_exchange_is_classified_bounded_and_never_replayed(fake_oauth):
    fake_oauth.control(token_error="invalid_grant")
    server = http_server(fake_oauth.mcp, auth="oauth")
    manager = AuthManager()
    with pytest.raises(AuthRequired) as raised:
        await manager.http_auth("e", server)
    answer = await follow_link(raised.value.link)
    assert answer.status_code == 200 and "failed: the code exchange failed (HTTP 400, invalid_grant)" in answer.text
    assert "HOSTILE" not in answer.text
    with pytest.raises(AuthError) as failed:
        await manager.wait_login("e", server, 30)
    message = str(failed.value)
    assert "invalid_grant" in message and "HTTP 400" in message
    assert "HOSTILE" not in message and "\x1b" not in message and len(message) < 400
    assert fake_oauth.counters()["token_code"] == 1
    with pytest.raises(AuthError, match="authorization_failed"):
        await manager.http_auth("e", server)
    await manager.aclose()


async def test_oversized_token_answer_is_refused(fake_oauth):
    fake_oauth.control(token_bloat=True)
    server = http_server(fake_oauth.mcp, auth="oauth")
    manager = AuthManager()
    with pytest.raises(AuthRequired) as raised:
        await manager.http_auth("o", server)
    assert (await follow_link(raised.value.link)).status_code == 200
    with pytest.raises(AuthError, match="1 MiB"):
        await manager.wait_login("o", server, 30)
    assert await SecureStore().read_raw(record_key("o", server)) is not None  # pending only
    assert await manager.credential_state("o", server) == "authorization failed"
    await manager.aclose()


async def test_a_sign_in_to_a_server_that_asks_for_none_says_it_is_usable_without_one():
    import subprocess

    with started([sys.executable, str(FAKES / "mcp_fixture_server.py"), "--http"], stdout=subprocess.PIPE,
                 text=True) as proc:
        server = http_server(proc.stdout.readline().strip(), auth="oauth")
        manager = AuthManager()
        try:
            with pytest.raises(AuthError) as raised:
                await manager.start_login("open", server)
            assert str(raised.value) == "MCP server 'open' did not ask for sign-in; it is usable without it"
            assert await manager.credential_state("open", server) == "signed out"  # nothing latched, nothing stored
            assert await SecureStore().read_raw(record_key("open", server)) is None
        finally:
            await manager.aclose()


async def test_a_callback_port_already_taken_fails_the_sign_in_and_latches():
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = http_server("http://127.0.0.1:9/mcp", auth="oauth", oauth={"redirectUri": f"http://127.0.0.1:{port}/cb"})
        manager = AuthManager()
        try:
            with pytest.raises(AuthError) as raised:
                await manager.start_login("busy", server)
            assert str(raised.value) == (
                "authorization_failed: sign-in to MCP server 'busy' failed (cannot listen for the authorization "
                f"callback on http://127.0.0.1:{port}); retry with `hostlink mcp auth busy` or the mcp tool's "
                'action "auth"')
            assert await manager.credential_state("busy", server) == "authorization failed"
        finally:
            await manager.aclose()


async def test_a_later_sign_in_on_a_fixed_redirect_uri_reuses_the_registration(fake_oauth):
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = http_server(fake_oauth.mcp, auth="oauth", oauth={"redirectUri": f"http://127.0.0.1:{port}/cb"})
    first = AuthManager()
    await sign_in(first, "again", server)
    await first.aclose()
    await _until_free(port)
    later = AuthManager()  # another session: `mcp auth` again
    try:
        link = await later.start_login("again", server)
        assert (await follow_link(link)).status_code == 200
        await later.wait_login("again", server, 30)
        assert await later.credential_state("again", server) == "signed in"
        counters = fake_oauth.counters()
        assert counters["register"] == 1 and counters["authorize"] == 2 and counters["token_code"] == 2
    finally:
        await later.aclose()


async def _until_free(port: int) -> None:
    """Until the closed callback listener has let go of `port` (it closes in its own task)."""
    import socket

    with anyio.fail_after(10):
        while True:
            with socket.socket() as again:
                again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    again.bind(("127.0.0.1", port))
                    return
                except OSError:
                    await anyio.sleep(0.01)


async def test_an_authorization_link_with_a_second_state_is_refused(fake_oauth):
    fake_oauth.control(authorization_query="state=chosen-by-the-server")
    server = http_server(fake_oauth.mcp, auth="oauth")
    manager = AuthManager()
    try:
        with pytest.raises(AuthError, match=r"failed \(the authorization link is malformed or too long\)"):
            await manager.start_login("two", server)
        assert fake_oauth.counters()["authorize"] == 0
        assert await SecureStore().read_raw(record_key("two", server)) is None  # refused before it is stored
        assert await manager.credential_state("two", server) == "authorization failed"
    finally:
        fake_oauth.control(authorization_query=None)
        await manager.aclose()


async def test_a_sign_out_while_the_sign_in_waits_for_the_browser_ends_the_wait(fake_oauth):
    server = http_server(fake_oauth.mcp, auth="oauth")
    manager = AuthManager()
    try:
        link = await manager.start_login("w", server)
        waiting = asyncio.ensure_future(manager.wait_login("w", server, 30))
        await asyncio.sleep(0)  # the wait has begun
        await manager.logout("w", server)
        with pytest.raises(AuthError, match=r"^the sign-in was cancelled \(sign-out or shutdown\)$"):
            await waiting
        assert await manager.credential_state("w", server) == "signed out"
        async with httpx2.AsyncClient() as client:
            with pytest.raises(httpx2.ConnectError):  # its callback listener is gone with it
                await client.get((await client.get(link)).headers["location"])
    finally:
        await manager.aclose()


async def test_a_refresh_the_server_fails_or_garbles_is_an_error_and_keeps_the_sign_in(fake_oauth):
    fake_oauth.control(access_expires_in=5)  # inside the refresh margin: every use refreshes
    server = http_server(fake_oauth.mcp, auth="oauth")
    manager = AuthManager()
    try:
        await sign_in(manager, "f", server)
        for answer, message in (
            ((400, '{"error": "invalid_client"}'), "refreshing the sign-in failed (HTTP 400, invalid_client)"),
            ((502, "<html>\x1b[31mBad gateway</html>"), "refreshing the sign-in failed (HTTP 502)"),
            ((200, '{"token_type": "Bearer"}'),
             "the authorization server's refresh answer is not a valid token response"),
        ):
            fake_oauth.control(refresh_answer=answer)
            with pytest.raises(AuthError) as raised:
                await manager.http_auth("f", server)
            assert not isinstance(raised.value, AuthRequired) and str(raised.value) == message
            assert await manager.credential_state("f", server) == "refreshable"  # not a dead refresh token: kept
        assert fake_oauth.counters()["token_refresh"] == 3
        assert await manager.http_auth("f", server) is not None  # the next refresh works
    finally:
        await manager.aclose()


async def test_a_sign_out_by_another_process_stops_a_refresh_here(fake_oauth):
    fake_oauth.control(access_expires_in=5, refresh_expires_in=5)
    server = http_server(fake_oauth.mcp, auth="oauth")
    manager = AuthManager()
    try:
        await sign_in(manager, "o", server)
        auth = await manager.http_auth("o", server)
        await SecureStore().delete(record_key("o", server))  # `hostlink mcp logout o` elsewhere
        async with httpx2.AsyncClient(auth=auth) as client:
            with pytest.raises(AuthRequired, match=r"^signed out of MCP server 'o'$"):
                await client.post(server.url, json={})
        refreshed = fake_oauth.counters()["token_refresh"]
        assert refreshed == 1  # the one on the way in; none once the record was gone
    finally:
        await manager.aclose()


# --- sign-out ------------------------------------------------------------------------------------


async def test_sign_out_blocks_cached_tokens_at_once(fake_oauth):
    server = http_server(fake_oauth.mcp, auth="oauth")
    manager = AuthManager()
    await sign_in(manager, "l", server)
    auth = await manager.http_auth("l", server)
    await manager.logout("l", server)
    async with httpx2.AsyncClient(auth=auth) as client:
        with pytest.raises(AuthRequired, match="signed out"):
            await client.post(server.url, json={})
    assert await manager.credential_state("l", server) == "signed out"
    assert await SecureStore().read_raw(record_key("l", server)) is None
    await manager.aclose()


async def test_stale_callback_after_sign_out_cannot_restore_tokens(fake_oauth):
    server = http_server(fake_oauth.mcp, auth="oauth")
    # same process: sign-out ends the flow, its callback is refused
    manager = AuthManager()
    with pytest.raises(AuthRequired) as raised:
        await manager.http_auth("t", server)
    async with httpx2.AsyncClient() as client:
        callback = (await client.get(raised.value.link)).headers["location"]
        await manager.logout("t", server)
        with pytest.raises(httpx2.ConnectError):
            await client.get(callback)
    assert await manager.credential_state("t", server) == "signed out"
    # another process signs out while this one waits: the completion is refused under the lock
    waiting, other = AuthManager(), AuthManager()
    with pytest.raises(AuthRequired) as raised:
        await waiting.http_auth("t", server)
    async with httpx2.AsyncClient() as client:
        callback = (await client.get(raised.value.link)).headers["location"]
        await other.logout("t", server)
        assert (await client.get(callback)).status_code == 200
    with pytest.raises(AuthError, match="superseded or signed out"):
        await waiting.wait_login("t", server, 30)
    assert await SecureStore().read_raw(record_key("t", server)) is None
    assert await other.credential_state("t", server) == "signed out"
    for each in (manager, waiting, other):
        await each.aclose()


# --- binding ------------------------------------------------------------------------------------


async def test_credentials_cannot_cross_server_urls_or_issuers(fake_oauth):
    server = http_server(fake_oauth.mcp, auth="oauth")
    manager = AuthManager()
    await sign_in(manager, "x", server)
    raw = await SecureStore().read_raw(record_key("x", server))
    moved = http_server(fake_oauth.mcp + "/other", auth="oauth")
    pinned = http_server(fake_oauth.mcp, auth="oauth", oauth={"issuer": "http://127.0.0.1:9"})
    renamed_key = record_key("y", server)
    assert len({record_key("x", server), record_key("x", moved), record_key("x", pinned), renamed_key}) == 4
    assert await manager.credential_state("x", moved) == "signed out"
    store = SecureStore()
    for name, target in (("x", moved), ("x", pinned), ("y", server)):
        key = record_key(name, target)
        await anyio.to_thread.run_sync(store._call, "set_password", key, raw)  # copy the record over
        assert await manager.credential_state(name, target) == "record mismatch"
        with pytest.raises(AuthError, match="another server or issuer"):
            await manager.http_auth(name, target)
        assert await store.read_raw(key) == raw  # refused, not overwritten
        await store.delete(key)
    await manager.aclose()


async def test_corrupt_record_is_kept_and_refused(fake_oauth):
    server = http_server(fake_oauth.mcp, auth="oauth")
    store = SecureStore()
    key = record_key("z", server)
    await anyio.to_thread.run_sync(store._call, "set_password", key, '{"version": 99}')
    manager = AuthManager()
    assert await manager.credential_state("z", server) == "record corrupt"
    with pytest.raises(AuthError, match="corrupt"):
        await manager.http_auth("z", server)
    with pytest.raises(AuthError, match="corrupt"):
        await manager.start_login("z", server)
    assert await store.read_raw(key) == '{"version": 99}'
    await manager.logout("z", server)
    assert await store.read_raw(key) is None
    await manager.aclose()


async def test_unavailable_keyring_fails_closed(fake_oauth, monkeypatch, tmp_path):
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", f"unix:path={tmp_path}/no-bus")
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")
    server = http_server(fake_oauth.mcp, auth="oauth")
    manager = AuthManager()
    assert await manager.credential_state("u", server) == "keyring unavailable"
    with pytest.raises(AuthError) as raised:
        await manager.http_auth("u", server)
    assert not isinstance(raised.value, AuthRequired)
    assert "keyring is unavailable" in str(raised.value)
    with pytest.raises(AuthError, match="keyring is unavailable"):
        await manager.logout("u", server)
    assert fake_oauth.counters()["metadata"] == 0  # no sign-in starts without a store
    home_files = [p for p in tmp_path.rglob("*") if p.is_file() and "browser-stubs" not in str(p)]
    assert all(".lock" in p.name for p in home_files), home_files
    await manager.aclose()


async def test_a_refusal_callback_ends_the_flow_with_a_known_code_only(fake_oauth):
    server = http_server(fake_oauth.mcp, auth="oauth")
    for sent, shown in (("access_denied", "access_denied"), ("\x1b]0;evil\x07 text", "unknown_error")):
        manager = AuthManager()
        with pytest.raises(AuthRequired) as raised:
            await manager.http_auth("d", server)
        answer = await follow_link(raised.value.link, tamper=lambda url, sent=sent: replace_query(
            url, error=sent).replace("code=", "ignored="))
        assert answer.status_code == 200 and shown in answer.text and "evil" not in answer.text
        with pytest.raises(AuthError) as failed:
            await manager.wait_login("d", server, 30)
        assert f"did not grant access ({shown})" in str(failed.value)
        assert fake_oauth.counters()["token_code"] == 0
        await manager.aclose()


async def test_a_configured_ipv6_loopback_redirect_uri(fake_oauth):
    import socket

    with socket.socket(socket.AF_INET6) as probe:
        probe.bind(("::1", 0))
        port = probe.getsockname()[1]
    server = http_server(fake_oauth.mcp, auth="oauth", oauth={"redirectUri": f"http://[::1]:{port}/cb"})
    manager = AuthManager()
    with pytest.raises(AuthRequired) as raised:
        await manager.http_auth("v6", server)
    assert f"redirect_uri=http%3A%2F%2F%5B%3A%3A1%5D%3A{port}%2Fcb" in raised.value.link
    assert (await follow_link(raised.value.link)).status_code == 200
    await manager.wait_login("v6", server, 30)
    assert await manager.credential_state("v6", server) == "signed in"
    from hostlink.mcp.config.schema import SchemaError

    with pytest.raises(SchemaError, match="redirectUri"):  # refused where the file is read, before any sign-in
        http_server(fake_oauth.mcp, auth="oauth", oauth={"redirectUri": f"http://localhost:{port}/cb"})
    await manager.aclose()


async def test_a_challenge_mid_session_fails_the_request_with_the_sign_in_link(fake_oauth):
    server = http_server(fake_oauth.mcp, auth="oauth")
    manager = AuthManager()
    await sign_in(manager, "m", server)
    runtime = McpRuntime({"m": server}, auth=manager)
    try:
        assert (await whoami(runtime, "m")).startswith("client client-")
        assert await manager.pending_link("m", server) is None
        fake_oauth.control(revoke_access=True)
        with pytest.raises(AuthRequired) as raised:
            await whoami(runtime, "m")  # the request fails with the link; it is not repeated
        link = raised.value.link
        assert link and link.startswith(fake_oauth.issuer + "/authorize?")
        assert str(raised.value).startswith("MCP server 'm' needs sign-in (HTTP 401): open this link")
        assert await manager.pending_link("m", server) == link
        assert await manager.credential_state("m", server) == "pending link"
        with pytest.raises(AuthRequired) as again:
            await whoami(runtime, "m")
        assert again.value.link == link  # one sign-in, whoever asks
        assert runtime.snapshot("m").state == "connected"
        assert (await follow_link(link)).status_code == 200
        await manager.wait_login("m", server, 30)
        assert (await whoami(runtime, "m")).startswith("client client-")  # same connection, new token
        assert fake_oauth.counters()["authorize"] == 2
    finally:
        await runtime.aclose()
        await manager.aclose()


async def test_a_step_up_challenge_mid_session_asks_for_more_access_with_a_link(fake_oauth):
    server = http_server(fake_oauth.mcp, auth="oauth")
    manager = AuthManager()
    await sign_in(manager, "u", server)
    runtime = McpRuntime({"u": server}, auth=manager)
    try:
        await whoami(runtime, "u")
        fake_oauth.control(require_scope="extra")
        with pytest.raises(AuthRequired) as raised:
            await whoami(runtime, "u")
        assert str(raised.value).startswith(
            "MCP server 'u' needs a sign-in with more access (HTTP 403, insufficient_scope): open this link")
        link = raised.value.link
        assert parse_qs(urlsplit(link).query)["scope"] == ["extra"]
        assert (await follow_link(link)).status_code == 200
        await manager.wait_login("u", server, 30)
        assert (await whoami(runtime, "u")).startswith("client client-")
    finally:
        await runtime.aclose()
        await manager.aclose()


async def test_a_challenge_during_setup_latches_the_sign_in_link(fake_oauth):
    server = http_server(fake_oauth.mcp, auth="oauth")
    manager = AuthManager()
    await sign_in(manager, "p", server)
    fake_oauth.control(revoke_access=True)  # the stored tokens look fine but the server refuses them
    runtime = McpRuntime({"p": server}, auth=manager)
    try:
        with pytest.raises(AuthRequired) as raised:
            await runtime.connect("p")
        link = raised.value.link
        assert link and "needs sign-in (HTTP 401)" in str(raised.value)
        assert "configure" not in str(raised.value) and "rejected" not in str(raised.value)
        snapshot = runtime.snapshot("p")
        assert snapshot.state == "failed" and snapshot.error is raised.value
        assert (await follow_link(link)).status_code == 200
        await manager.wait_login("p", server, 30)
        await runtime.reconnect("p")
        assert (await whoami(runtime, "p")).startswith("client client-")
    finally:
        await runtime.aclose()
        await manager.aclose()


async def test_a_challenge_whose_sign_in_fails_reports_authorization_failed(fake_oauth):
    server = http_server(fake_oauth.mcp, auth="oauth")
    manager = AuthManager()
    await sign_in(manager, "q", server)
    runtime = McpRuntime({"q": server}, auth=manager)
    try:
        await whoami(runtime, "q")
        fake_oauth.control(revoke_access=True, metadata_issuer="http://127.0.0.1:9/elsewhere")
        for _ in range(2):
            with pytest.raises(AuthError) as raised:
                await whoami(runtime, "q")
            assert not isinstance(raised.value, AuthRequired)
            message = str(raised.value)
            assert message.startswith("authorization_failed: sign-in to MCP server 'q' failed")
            assert "hostlink mcp auth q" in message and 'action "auth"' in message
        assert fake_oauth.counters()["metadata"] == 2  # one for the first sign-in, one for the failed start
    finally:
        await runtime.aclose()
        await manager.aclose()


async def test_the_host_hears_when_a_linked_sign_in_ends(fake_oauth):
    class Notices:
        def __init__(self):
            self.seen = []

        def notify(self, message, level="info"):
            self.seen.append((level, message))

    server = http_server(fake_oauth.mcp, auth="oauth")
    notices = Notices()
    manager = AuthManager(notifier=notices)
    await sign_in(manager, "n", server)
    assert notices.seen == [("info", "Signed in to MCP server 'n'.")]
    fake_oauth.control(token_error="access_denied")
    link = await manager.start_login("n", server)
    assert (await follow_link(link)).status_code == 200
    with pytest.raises(AuthError):
        await manager.wait_login("n", server, 30)
    assert notices.seen[1] == ("warning", "Sign-in to MCP server 'n' failed: the code exchange failed "
                                          "(HTTP 400, access_denied).")
    await manager.aclose()


async def test_a_refused_refresh_leads_to_a_new_link(fake_oauth):
    fake_oauth.control(access_expires_in=5)
    server = http_server(fake_oauth.mcp, auth="oauth")
    manager = AuthManager()
    await sign_in(manager, "g", server)
    assert await manager.credential_state("g", server) == "refreshable"
    fake_oauth.control(revoke_access=True)
    store = SecureStore()
    key = record_key("g", server)
    from hostlink.mcp.auth.store import parse_record

    record = parse_record(await store.read_raw(key))
    broken = record.tokens.model_copy(update={"refresh_token": "not-a-live-refresh-token"})
    await store.save(key, record.model_copy(update={"tokens": broken}))
    fresh = AuthManager()
    with pytest.raises(AuthRequired) as raised:
        await fresh.http_auth("g", server)
    assert raised.value.link and fake_oauth.counters()["token_refresh"] == 1
    assert parse_record(await store.read_raw(key)).tokens is None  # the dead refresh token is gone
    for m in (manager, fresh):
        await m.aclose()


async def test_an_expired_sign_in_without_a_refresh_token_leads_to_a_new_link(fake_oauth):
    import time

    from hostlink.mcp.auth.store import StoredTokens, parse_record

    server = http_server(fake_oauth.mcp, auth="oauth")
    manager = AuthManager()
    await sign_in(manager, "x", server)
    store, key = SecureStore(), record_key("x", server)
    record = parse_record(await store.read_raw(key))
    expired = StoredTokens(access_token=record.tokens.access_token, expires_at=time.time() - 1)
    await store.save(key, record.model_copy(update={"tokens": expired}))
    fresh = AuthManager()  # a later session
    try:
        assert await fresh.credential_state("x", server) == "expired"
        with pytest.raises(AuthRequired) as raised:
            await fresh.http_auth("x", server)
        assert raised.value.link and raised.value.link.startswith(fake_oauth.issuer + "/authorize?")
        assert fake_oauth.counters()["token_refresh"] == 0  # nothing to refresh with: no request
    finally:
        for each in (manager, fresh):
            await each.aclose()


async def test_the_mcp_tool_hands_the_model_a_link_and_the_host_hears_the_result(fake_oauth, tmp_path):
    from hostlink.mcp.extension import McpExtension
    from mcp_runtime_support import Host, text

    server = http_server(fake_oauth.mcp, auth="oauth")
    async with Host(McpExtension(servers={"web": server}), tmp_path) as host:
        result = await host.run(action="call", server="web", tool="whoami", args={})
        assert result.is_error
        link = next(word for word in text(result).split() if word.startswith(fake_oauth.issuer + "/authorize?"))
        assert (await follow_link(link)).status_code == 200
        await host.extension._auth.wait_login("web", server, 30)
        assert any("Signed in to MCP server 'web'" in str(note) for note in host.notes.seen)
        result = await host.run(action="call", server="web", tool="whoami", args={})
        assert not result.is_error and text(result).startswith("client client-")


def _links(result, issuer: str) -> list[str]:
    from mcp_runtime_support import text

    return [word for word in text(result).split() if word.startswith(issuer + "/authorize?")]


async def test_the_mcp_tool_auth_action_retries_a_failed_sign_in_without_saving_configuration(fake_oauth, tmp_path):
    import json

    from hostlink.mcp.extension import McpExtension
    from mcp_runtime_support import Host, text

    config_dir = tmp_path / "config" / "mcp"
    config_dir.mkdir(parents=True)
    document = json.dumps({"mcpServers": {"web": {"url": fake_oauth.mcp, "auth": "oauth"}}})
    (config_dir / "mcp.json").write_text(document)
    fake_oauth.control(metadata_issuer="http://127.0.0.1:9/elsewhere")
    extension = McpExtension(environ={"XDG_CONFIG_HOME": str(tmp_path / "config"), "HOME": str(tmp_path)})
    async with Host(extension, tmp_path) as host:
        for _ in range(2):
            failed = await host.run(action="call", server="web", tool="whoami", args={})
            assert failed.is_error and text(failed).startswith("authorization_failed: sign-in to MCP server 'web'")
            assert 'the mcp tool\'s action "auth"' in text(failed) and not _links(failed, fake_oauth.issuer)
        seen = fake_oauth.counters()["metadata"]
        assert seen == 1  # latched: the second call started nothing
        fake_oauth.control(metadata_issuer=None)
        started = await host.run(action="auth", server="web")
        assert not started.is_error
        assert text(started).startswith("Sign-in to MCP server 'web' started.\nAuthorization link")
        (link,) = _links(started, fake_oauth.issuer)
        assert (await follow_link(link)).status_code == 200
        server = extension.runtime.config("web")
        await extension._auth.wait_login("web", server, 30)
        result = await host.run(action="call", server="web", tool="whoami", args={})
        assert not result.is_error and text(result).startswith("client client-")
    assert [p.name for p in config_dir.parent.rglob("*")] == ["mcp", "mcp.json"]
    assert (config_dir / "mcp.json").read_text() == document


async def test_ten_concurrent_mcp_tool_auth_actions_give_one_link(fake_oauth, tmp_path):
    from hostlink.mcp.extension import McpExtension
    from mcp_runtime_support import Host

    server = http_server(fake_oauth.mcp, auth="oauth")
    async with Host(McpExtension(servers={"web": server}), tmp_path) as host:
        results = []

        async def auth() -> None:
            results.append(await host.run(action="auth", server="web"))

        async with anyio.create_task_group() as group:
            for _ in range(10):
                group.start_soon(auth)
        links = {link for result in results for link in _links(result, fake_oauth.issuer)}
        assert len(results) == 10 and not any(result.is_error for result in results) and len(links) == 1
        counters = fake_oauth.counters()
        assert counters["register"] == 1 and counters["metadata"] == 1 and counters["authorize"] == 0
        assert await host.extension._auth.credential_state("web", server) == "pending link"
        assert host.extension.runtime.snapshot("web").state == "idle"  # the action does not connect


async def test_the_host_mcp_command_signs_in_by_link_and_signs_out(fake_oauth, tmp_path):
    from hostlink.host import CancelSignal, CommandFailed
    from hostlink.mcp.config.schema import parse_server
    from hostlink.mcp.extension import McpExtension
    from mcp_runtime_support import Host

    server = http_server(fake_oauth.mcp, auth="oauth")
    local = parse_server({"command": sys.executable, "args": ["-c", "pass"]})
    async with Host(McpExtension(servers={"web": server, "local": local}), tmp_path) as host:
        command = host.registry.commands["mcp"]

        async def mcp(*argv: str) -> str:
            return await command.run(list(argv), CancelSignal())

        answer = await mcp("auth", "web")
        assert answer.startswith("Open this link in your browser to sign in to web:\n")
        (link,) = [line for line in answer.splitlines() if line.startswith(fake_oauth.issuer + "/authorize?")]
        assert (await follow_link(link)).status_code == 200
        await host.extension._auth.wait_login("web", server, 30)
        assert await host.extension._auth.credential_state("web", server) == "signed in"
        result = await host.run(action="call", server="web", tool="whoami", args={})
        assert not result.is_error

        assert await mcp("logout", "web") == ("web: signed out (the keyring confirmed the record is gone); "
                                              "the authorization server revoked its tokens")
        assert await host.extension._auth.credential_state("web", server) == "signed out"
        after = await host.run(action="call", server="web", tool="whoami", args={})
        assert after.is_error and _links(after, fake_oauth.issuer)  # signed out: a fresh link, no token

        with pytest.raises(CommandFailed, match=r"^MCP server 'local' is a local stdio server; it has no sign-in$"):
            await mcp("auth", "local")
        with pytest.raises(CommandFailed, match=r"^unknown MCP server 'missing' \(known: local, web\)$"):
            await mcp("auth", "missing")
        assert (await mcp("auth")).startswith("usage: /mcp status")
    assert fake_oauth.counters()["authorize"] == 1
