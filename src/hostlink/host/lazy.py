"""Faces that load what they name on first use (PEP 562), so importing one costs nothing.

An extension's face (`hostlink.mcp`, `hostlink.claude_code`) lists its public names in
`__all__` and, for type checkers, imports them under `TYPE_CHECKING`; at run time the
module's `__getattr__` imports the module a name lives in only when a host first asks for it.
`hostlink --help` and `hostlink mcp status` never pay for the SDKs behind the names.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(face: str, where: Mapping[str, tuple[str, str]]) -> Callable[[str], Any]:
    """The `__getattr__` of the face module `face`: `where` maps each public name to the
    module and attribute it is (an alias may rename, as `describe_usage` does)."""

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {face!r} has no attribute {name!r}")
        module, attribute = where[name]
        value = getattr(importlib.import_module(module), attribute)
        setattr(importlib.import_module(face), name, value)  # the next lookup is a plain attribute
        return value

    return __getattr__
