"""Every hostlink module imports, on Linux and on Windows: a module that reaches for a POSIX-only
name at import time (`resource`, `fcntl`, `signal.SIGHUP`) breaks every host that loads it."""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

import pytest

import hostlink

PACKAGE = Path(hostlink.__file__).parent
# From the files, not pkgutil.walk_packages: that imports each package to find its children. A
# `__main__` is a program (the demo server serves on import), not a module to import.
MODULES = sorted(".".join(("hostlink", *path.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(".__init__")
                 for path in PACKAGE.rglob("*.py") if path.name != "__main__.py")
# Hosts on a framework that a system may lack: their modules import the framework itself. The Windows
# lane installs the llm and pydantic-ai extras only (scripts/setup-windows), not these two yet.
FRAMEWORKS = {"hostlink.adapters.langchain": "langchain_core", "hostlink.adapters.litellm": "litellm"}


@pytest.mark.parametrize("module", MODULES)
def test_module_imports(module):
    for package, framework in FRAMEWORKS.items():
        if module.startswith(package) and importlib.util.find_spec(framework) is None:
            pytest.skip(f"{framework} is not installed here (the {package.rsplit('.', 1)[1]} extra)")
    importlib.import_module(module)

