"""Sign-in and auth errors without a usable keyring (issue 15, problem 8b) say what is missing —
no D-Bus session, an unreachable bus, no Secret Service on it, a locked collection — and what
to install or start, and never suggest running the failing command again.

Real D-Bus throughout: the CLI runs with DBUS_SESSION_BUS_ADDRESS unset, pointing nowhere, or
at a private bus of its own with no services; the locked case locks the gnome-keyring that
`scripts/with-keyring` runs (and restarts it unlocked afterwards).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from mcp_auth_support import start_keyring_daemon, stop_keyring_daemon
from process_support import started

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("keyring_required", "no_browser", "isolated_state")]
HOSTLINK = [sys.executable, "-c", "from hostlink.cli import main; main()"]
BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>session</type><listen>unix:dir={dir}</listen><auth>EXTERNAL</auth>
<policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/>
</policy></busconfig>
"""


@pytest.fixture
def configured(fake_oauth, tmp_path, monkeypatch):
    config = tmp_path / "config"
    (config / "hostlink").mkdir(parents=True)
    (config / "hostlink" / "mcp.json").write_text(json.dumps({"mcpServers": {
        "fake": {"url": fake_oauth.mcp, "auth": "oauth"}}}))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    monkeypatch.chdir(tmp_path)
    return fake_oauth


@pytest.fixture
def empty_bus(tmp_path):
    """A D-Bus session bus of this test's own, with no services at all (none activatable)."""
    (tmp_path / "bus").mkdir()
    conf = tmp_path / "bus.conf"
    conf.write_text(BUS_CONFIG.format(dir=tmp_path / "bus"))
    with started(["dbus-daemon", f"--config-file={conf}", "--nofork", "--print-address=1"],
                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as daemon:
        yield daemon.stdout.readline().strip()


def run(*argv: str, bus: str | None) -> subprocess.CompletedProcess:
    environ = {key: value for key, value in os.environ.items() if key != "DBUS_SESSION_BUS_ADDRESS"}
    if bus is not None:
        environ["DBUS_SESSION_BUS_ADDRESS"] = bus
    result = subprocess.run([*HOSTLINK, *argv], capture_output=True, text=True, env=environ, timeout=120)
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    return result


def assert_advice_only(result: subprocess.CompletedProcess, *expected: str) -> None:
    """Exit 4, the cause and its fix, and no suggestion to run the failing command again."""
    assert result.returncode == 4, result.stderr
    for text in expected:
        assert text in result.stderr, result.stderr
    assert "retry" not in result.stderr and "hostlink mcp auth" not in result.stderr, result.stderr
    assert "none were read or written" in result.stderr


async def test_no_dbus_session_names_the_variable_and_what_to_start(configured):
    for argv in (("mcp", "auth", "fake", "--timeout", "5"), ("mcp", "call", "fake", "whoami")):
        assert_advice_only(run(*argv, bus=None), "DBUS_SESSION_BUS_ADDRESS is not set", "dbus-run-session",
                           "apt install gnome-keyring", "gnome-keyring-daemon --unlock --components=secrets")
    assert configured.counters()["metadata"] == 0  # nothing was started without a store


async def test_an_unreachable_bus_is_named(configured, tmp_path):
    assert_advice_only(run("mcp", "auth", "fake", "--timeout", "5", bus=f"unix:path={tmp_path}/no-bus"),
                       "the D-Bus session bus named by DBUS_SESSION_BUS_ADDRESS cannot be reached")


async def test_a_bus_without_a_secret_service_says_what_to_install(configured, empty_bus):
    result = run("mcp", "auth", "fake", "--timeout", "5", bus=empty_bus)
    assert_advice_only(result, "no Secret Service (org.freedesktop.secrets) is running on the D-Bus session bus",
                       "apt install gnome-keyring", "gnome-keyring-daemon --unlock --components=secrets")
    status = run("mcp", "status", bus=empty_bus)
    assert status.returncode == 0 and "keyring unavailable" in status.stdout


def _locked() -> bool:
    """Whether the default collection is locked — or not there yet: while a replacing daemon
    takes over, nobody owns the Secret Service name for a moment."""
    import secretstorage
    from jeepney.wrappers import DBusErrorResponse

    bus = secretstorage.dbus_init()
    try:
        return secretstorage.get_default_collection(bus).is_locked()
    except (secretstorage.exceptions.SecretServiceNotAvailableException, DBusErrorResponse):
        return True
    finally:
        bus.close()


@pytest.mark.serial  # the shared keyring locks and its daemon is replaced
async def test_a_locked_collection_says_how_to_unlock_and_that_way_works(configured):
    import secretstorage

    bus = secretstorage.dbus_init()
    try:
        secretstorage.get_default_collection(bus).lock()
    finally:
        bus.close()
    advised = "gnome-keyring-daemon --replace --unlock --components=secrets"
    try:
        for argv in (("mcp", "auth", "fake", "--timeout", "5"), ("mcp", "call", "fake", "whoami")):
            assert_advice_only(run(*argv, bus=os.environ["DBUS_SESSION_BUS_ADDRESS"]),
                               "the OS keyring's collection is locked: unlock it", advised)
        # the advice itself, as a person without a desktop would follow it
        subprocess.run(advised.split(), input=os.environ["HOSTLINK_TEST_KEYRING_PASSWORD"].encode(),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, timeout=30)
        deadline = time.monotonic() + 20
        while _locked() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _locked()
        status = run("mcp", "status", bus=os.environ["DBUS_SESSION_BUS_ADDRESS"])
        assert "signed out" in status.stdout, status.stdout
    finally:
        if _locked():  # leave the next test an unlocked keyring whatever happened here
            stop_keyring_daemon()
            start_keyring_daemon()
