"""Every hostlink module imports, on Linux and on Windows: a module that reaches for a POSIX-only
name at import time (`resource`, `fcntl`, `signal.SIGHUP`) breaks every host that loads it."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import hostlink
from windows_support import NEEDS_SEAM

PACKAGE = Path(hostlink.__file__).parent
# From the files, not pkgutil.walk_packages: that imports each package to find its children. A
# `__main__` is a program (the demo server serves on import), not a module to import.
MODULES = sorted(".".join(("hostlink", *path.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(".__init__")
                 for path in PACKAGE.rglob("*.py") if path.name != "__main__.py")
# The modules that fail to import on Windows today: `signal.SIGHUP` (host/session.py, and all that
# import it), `fcntl` (mcp/auth/store.py and the auth modules on it).
POSIX_ONLY_TODAY = {
    "hostlink.adapters.llm.llm_host",
    "hostlink.adapters.pydantic_ai",
    "hostlink.adapters.pydantic_ai.model",
    "hostlink.adapters.pydantic_ai.toolset",
    "hostlink.cli.demo",
    "hostlink.gateway.http",
    "hostlink.gateway.server",
    "hostlink.gateway.session",
    "hostlink.host.session",
    "hostlink.mcp.auth.manager",
    "hostlink.mcp.auth.oauth",
    "hostlink.mcp.auth.revocation",
    "hostlink.mcp.auth.signin",
    "hostlink.mcp.auth.store",
    "hostlink.serve",
    "hostlink.serve.access_log",
    "hostlink.serve.app",
    "hostlink.serve.body",
    "hostlink.serve.connections",
    "hostlink.serve.response_store",
    "hostlink.serve.responses",
    "hostlink.serve.responses_stream",
    "hostlink.serve.server",
    "hostlink.serve.tokens",
    "hostlink.serve.usage",
}


@pytest.mark.parametrize("module", [pytest.param(name, marks=NEEDS_SEAM) if name in POSIX_ONLY_TODAY else name
                                    for name in MODULES])
def test_module_imports(module):
    importlib.import_module(module)

