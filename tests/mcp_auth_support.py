"""Helpers of the MCP auth tests: the fake OAuth server's handle, sign-in, the keyring daemon.

Their fixtures (`fake_oauth`: one server per module, reset for each test; `keyring_required`,
`no_browser`, `isolated_state`) are in tests/conftest.py; a module opts in to the browser stubs
and its own state dir with `pytest.mark.usefixtures("no_browser", "isolated_state")`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import httpx2
import pytest

FAKES = Path(__file__).parent / "fakes"


class FakeOAuth:
    def __init__(self, proc: subprocess.Popen, info: dict) -> None:
        self.proc = proc
        self.issuer = info["issuer"]
        self.mcp = info["mcp"]

    def counters(self) -> dict:
        return httpx2.get(f"{self.issuer}/_counters").json()

    def control(self, **values) -> None:
        httpx2.post(f"{self.issuer}/_control", json=values).raise_for_status()

    def reset(self, tag: str) -> FakeOAuth:
        """This server with its state reset, as seen at `/mcp/TAG` (the same endpoint, another URL)."""
        self.control(reset=True)
        return FakeOAuth(self.proc, {"issuer": self.issuer, "mcp": f"{self.mcp}/{tag}"})


def http_server(url: str, **fields):
    from hostlink.mcp.config.schema import parse_server

    return parse_server({"url": url, **fields})


async def follow_link(link: str, *, tamper=None) -> httpx2.Response:
    """Do what the user's browser does: open the link, follow the redirect to the callback."""
    async with httpx2.AsyncClient() as client:
        approval = await client.get(link)
        assert approval.status_code == 302, approval.text
        callback = approval.headers["location"]
        if tamper is not None:
            callback = tamper(callback)
        return await client.get(callback)


async def sign_in(manager, name: str, server) -> None:
    """The whole sign-in as a user does it: the call's link, the browser, the callback."""
    from hostlink.mcp.errors import AuthRequired

    with pytest.raises(AuthRequired) as raised:
        await manager.http_auth(name, server)
    answer = await follow_link(raised.value.link)
    assert answer.status_code == 200
    await manager.wait_login(name, server, 30)


def _bus_call(method: str, *args: str):
    from jeepney import DBusAddress, new_method_call
    from jeepney.io.blocking import open_dbus_connection

    bus = DBusAddress("/org/freedesktop/DBus", bus_name="org.freedesktop.DBus", interface="org.freedesktop.DBus")
    with open_dbus_connection(bus="SESSION") as connection:
        return connection.send_and_get_reply(new_method_call(bus, method, "s" * len(args), args)).body[0]


def _wait_for_owner(present: bool) -> None:
    deadline = time.monotonic() + 20
    while _bus_call("NameHasOwner", "org.freedesktop.secrets") != present:
        assert time.monotonic() < deadline, "the keyring daemon did not change state"
        time.sleep(0.05)


def stop_keyring_daemon() -> None:
    pid = _bus_call("GetConnectionUnixProcessID", "org.freedesktop.secrets")
    os.kill(pid, signal.SIGTERM)  # the daemon scripts/with-keyring started, found by its bus name
    _wait_for_owner(False)


def keyring_daemon_running() -> bool:
    return bool(_bus_call("NameHasOwner", "org.freedesktop.secrets"))


def start_keyring_daemon() -> None:
    """An unlocked daemon on the bus, in a session of its own as scripts/with-keyring starts it."""
    subprocess.run(["setsid", "gnome-keyring-daemon", "--unlock", "--components=secrets"], check=True,
                   input=os.environ["HOSTLINK_TEST_KEYRING_PASSWORD"].encode(), stdout=subprocess.DEVNULL)
    _wait_for_owner(True)
