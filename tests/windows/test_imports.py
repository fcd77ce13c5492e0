"""Every hostlink module imports, on Linux and on Windows: a module that reaches for a POSIX-only
name at import time (`resource`, `fcntl`, `signal.SIGHUP`) breaks every host that loads it."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import hostlink

PACKAGE = Path(hostlink.__file__).parent
# From the files, not pkgutil.walk_packages: that imports each package to find its children. A
# `__main__` is a program (the demo server serves on import), not a module to import.
MODULES = sorted(".".join(("hostlink", *path.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(".__init__")
                 for path in PACKAGE.rglob("*.py") if path.name != "__main__.py")


# Every host's framework is installed wherever this runs (the Windows lane installs every extra:
# scripts/setup-windows; the GitHub workflow likewise), so no module is skipped.
@pytest.mark.parametrize("module", MODULES)
def test_module_imports(module):
    importlib.import_module(module)

