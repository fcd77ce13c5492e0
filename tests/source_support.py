"""Parsing Python source in the tests without CPython 3.11's AST race."""

from __future__ import annotations

import ast
import gc


def parse(source: str) -> ast.Module:
    """`ast.parse` with the garbage collector paused.

    CPython 3.11 keeps the AST constructor's recursion depth in interpreter-wide state. A collection
    inside the constructor runs finalizers, which can switch to another thread that parses too (the
    traceback module parses when it prints one), and the parse then fails with "SystemError: AST
    constructor recursion depth mismatch" — a docs test did once on a loaded machine. Without a
    collection the constructor runs no Python code, so no other thread can interleave.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(source)
    finally:
        if enabled:
            gc.enable()
