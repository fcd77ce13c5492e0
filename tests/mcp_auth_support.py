"""Shared fixtures of the MCP auth tests: the fake OAuth server, a real keyring, browser stubs.

Import with ``from mcp_auth_support import *`` in a test module. The keyring tests need the
private Secret Service that ``scripts/with-keyring`` provides; outside CI they are skipped
without it, in CI (``CI`` set) they fail.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest

FAKES = Path(__file__).parent / "fakes"
BROWSERS = ("open", "xdg-open", "sensible-browser", "x-www-browser", "www-browser", "gnome-open", "kde-open")

__all__ = [
    "FakeOAuth",
    "fake_oauth",
    "follow_link",
    "http_server",
    "isolated_state",
    "keyring_required",
    "no_browser",
    "sign_in",
    "start_keyring_daemon",
    "stop_keyring_daemon",
]


@pytest.fixture
def keyring_required():
    if not os.environ.get("HOSTLINK_TEST_KEYRING_PASSWORD"):
        if os.environ.get("CI"):
            pytest.fail("CI must run these tests under scripts/with-keyring (a private Secret Service)")
        pytest.skip("needs scripts/with-keyring (private D-Bus + gnome-keyring)")


@pytest.fixture(autouse=True)
def no_browser(tmp_path, monkeypatch):
    """Browser launchers on PATH that record being run; a test fails if any was."""
    stubs = tmp_path / "browser-stubs"
    stubs.mkdir()
    marker = tmp_path / "browser-launched"
    for name in BROWSERS:
        script = stubs / name
        script.write_text(f"#!/bin/sh\necho {name} >> '{marker}'\nexit 1\n")
        script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{stubs}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("BROWSER", str(stubs / "xdg-open"))
    had_webbrowser = "webbrowser" in sys.modules
    yield
    assert not marker.exists(), f"a browser launcher was run: {marker.read_text()}"
    assert had_webbrowser or "webbrowser" not in sys.modules, "the webbrowser module was imported"


@pytest.fixture(autouse=True)
def isolated_state(tmp_path, monkeypatch):
    """Lock files of each test in its own state dir."""
    state = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    return state


class FakeOAuth:
    def __init__(self, proc: subprocess.Popen, info: dict) -> None:
        self.proc = proc
        self.issuer = info["issuer"]
        self.mcp = info["mcp"]

    def counters(self) -> dict:
        return httpx2.get(f"{self.issuer}/_counters").json()

    def control(self, **values) -> None:
        httpx2.post(f"{self.issuer}/_control", json=values).raise_for_status()


@pytest.fixture
def fake_oauth():
    proc = subprocess.Popen([sys.executable, str(FAKES / "fake_oauth_server.py")], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        line = proc.stdout.readline()
        assert line, "the fake OAuth server did not start"
        yield FakeOAuth(proc, json.loads(line))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()


def http_server(url: str, **fields):
    from hostlink.mcp.schema import parse_server

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


def start_keyring_daemon() -> None:
    subprocess.run(["gnome-keyring-daemon", "--unlock", "--components=secrets"], check=True,
                   input=os.environ["HOSTLINK_TEST_KEYRING_PASSWORD"].encode(), stdout=subprocess.DEVNULL)
    _wait_for_owner(True)
