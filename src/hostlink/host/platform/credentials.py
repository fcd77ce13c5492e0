"""Which OS keyring holds secrets on this system: `keyring`'s own native backend (Secret
Service on Linux, the Keychain on macOS, Windows Credential Manager), never a plaintext,
null or in-memory one, and never whatever `keyring` would pick by its own priority."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from keyring.backend import KeyringBackend

SECRET_SERVICE = sys.platform.startswith("linux")  # its failures have causes worth telling apart
STORE_NAME = ("Windows Credential Manager" if sys.platform == "win32"
              else "the macOS Keychain" if sys.platform == "darwin" else "the Secret Service")


def native_keyring() -> type[KeyringBackend] | None:
    """The native backend class of this system; None on a system without one."""
    if sys.platform.startswith("linux"):
        from keyring.backends.SecretService import Keyring
    elif sys.platform == "darwin":
        from keyring.backends.macOS import Keyring
    elif sys.platform == "win32":
        from keyring.backends.Windows import WinVaultKeyring as Keyring
    else:
        return None
    return Keyring
