"""What is missing when the OS keyring cannot be used, and what to install or start.

A keyring backend only says "unavailable" (an exception type at best). On Linux the causes a
person can fix are few and can be told apart by asking the session bus itself: no D-Bus
session at all, a session bus that cannot be reached, no Secret Service on it, or a locked
collection. The advice names the fix, never the command that failed: running it again
without the fix would fail the same way. D-Bus calls block, so this runs in the store's
worker thread, bounded by a short timeout.
"""

from __future__ import annotations

import os
from typing import Any

from hostlink.host.platform.credentials import SECRET_SERVICE, STORE_NAME

SECRETS = "org.freedesktop.secrets"
PROBE_TIMEOUT_SECONDS = 2.0
INSTALL = "Debian/Ubuntu: `apt install gnome-keyring`; KeePassXC's Secret Service integration works too"


def unavailable_reason() -> str:
    """Why the keyring is unavailable here and what to do, as one sentence."""
    if not SECRET_SERVICE:
        return f"{STORE_NAME} did not answer; check that it is set up and unlocked for this user"
    if not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
        return ("there is no D-Bus session (DBUS_SESSION_BUS_ADDRESS is not set), so no Secret Service can be "
                "reached: run hostlink in a desktop login session, or start a session bus with "
                f"`dbus-run-session -- $SHELL` and a keyring in it ({INSTALL}; then "
                "`gnome-keyring-daemon --unlock --components=secrets`, which reads the password on stdin)")
    try:
        owned, activatable = _probe()
    except Exception as error:  # noqa: BLE001 - whatever the bus does, the person learns it is unreachable
        return (f"the D-Bus session bus named by DBUS_SESSION_BUS_ADDRESS cannot be reached "
                f"({type(error).__name__}): start it, or unset a stale DBUS_SESSION_BUS_ADDRESS and log in again")
    if not owned and not activatable:
        return (f"no Secret Service ({SECRETS}) is running on the D-Bus session bus: install one ({INSTALL}) "
                "and start it: a desktop login does, and without a desktop "
                "`gnome-keyring-daemon --unlock --components=secrets` does (it reads the password on stdin)")
    return f"the Secret Service ({SECRETS}) on the D-Bus session bus did not answer; restart it"


LOCKED_REASON = (
    "the OS keyring's collection is locked: unlock it — a desktop login unlocks it, as does the desktop's "
    "keyring manager (Passwords and Keys / seahorse); without a desktop, restart gnome-keyring with the password "
    "on stdin: `gnome-keyring-daemon --replace --unlock --components=secrets`"
)


def _probe() -> tuple[bool, bool]:
    """Whether the session bus has a Secret Service now, and whether it could start one."""
    from jeepney import DBusAddress, new_method_call
    from jeepney.io.blocking import open_dbus_connection

    bus = DBusAddress("/org/freedesktop/DBus", bus_name="org.freedesktop.DBus", interface="org.freedesktop.DBus")
    with open_dbus_connection(bus="SESSION") as connection:
        def ask(method: str, *args: str) -> Any:  # a D-Bus reply's body: jeepney is untyped
            call = new_method_call(bus, method, "s" * len(args), args)
            return connection.send_and_get_reply(call, timeout=PROBE_TIMEOUT_SECONDS).body[0]

        return bool(ask("NameHasOwner", SECRETS)), SECRETS in ask("ListActivatableNames")
