"""The quick exit: one collection, then the heap frozen, for the processes hostlink's hosts own.

Each check runs a real interpreter to its real exit."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from hostlink.adapters.llm.llm_host import LlmHost
from hostlink.cli import process_exit

# Registered before the code under test, so it runs after the exit step (atexit: last in, first out).
_REPORT = """
import atexit, gc
atexit.register(lambda: print("frozen" if gc.get_freeze_count() else "not frozen"))
"""


def _exit_output(code: str = "") -> str:
    """What a fresh interpreter running `code` prints, with the report of its exit last."""
    done = subprocess.run([sys.executable, "-c", _REPORT + textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_garbage_is_still_finalized_and_the_rest_frozen_at_exit():
    out = _exit_output("""
    from hostlink.cli.process_exit import freeze_heap_at_exit

    class Cycle:
        def __del__(self):
            print("finalized")

    freeze_heap_at_exit()
    garbage = Cycle()
    garbage.me = garbage  # only a collection frees it
    del garbage
    """)
    assert out.splitlines() == ["finalized", "frozen"]


def test_without_it_the_heap_is_not_frozen():
    assert _exit_output().strip() == "not frozen"


def test_the_hostlink_command_exits_quickly():
    out = _exit_output("""
    import sys
    from hostlink.cli import main
    sys.argv = ["hostlink", "--help"]
    main()
    """)
    assert out.splitlines()[-1] == "frozen"


def test_the_step_is_registered_once(monkeypatch):
    registered = []
    monkeypatch.setattr(process_exit, "_registered", False)
    monkeypatch.setattr(process_exit.atexit, "register", registered.append)
    process_exit.freeze_heap_at_exit()
    process_exit.freeze_heap_at_exit()
    assert registered == [process_exit._collect_and_freeze]


def test_the_llm_host_registers_it_when_its_session_starts(monkeypatch):
    monkeypatch.setattr(process_exit, "_registered", False)
    host = LlmHost([])
    try:
        assert not process_exit._registered  # constructing registers nothing: llm --help stays as it was
        host._ready_loop()
        assert process_exit._registered
    finally:
        host.close()
