"""The Windows branch of the platform seam, driven on Linux through stand-ins for the Win32
calls: the order in which a child enters its job, the seed's taskkill call, command lines."""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio
import pytest

from hostlink.host.platform import commands, processes
from hostlink.host.platform.processes import WindowsTree, start_windows, taskkill_argv
from hostlink.host.platform.win32 import CREATE_NO_WINDOW, CREATE_SUSPENDED

pytestmark = pytest.mark.anyio
WINDOWS_ENV = {"SystemRoot": r"C:\Windows"}
JOB = 77


class StandIn:
    """The Win32 calls, recorded in order; a job holds `running` processes."""

    def __init__(self, *, fail: str | None = None) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.running = 1
        self._fail = fail

    def _record(self, *call: Any) -> None:
        self.calls.append(call)
        if call[0] == self._fail:
            raise OSError(f"{call[0]} failed")

    def create_job(self) -> int:
        self._record("create_job")
        return JOB

    def assign(self, job: int, pid: int) -> None:
        self._record("assign", job, pid)

    def resume(self, pid: int) -> None:
        self._record("resume", pid)

    def active_processes(self, job: int) -> int:
        return self.running

    def terminate_job(self, job: int) -> None:
        self._record("terminate_job", job)
        self.running = 0

    def close(self, handle: int) -> None:
        self._record("close", handle)

    def run(self, argv: Any) -> int:
        self._record("run", list(argv))
        return 0

    def alive(self, pid: int) -> bool:
        return True


class SuspendedChild:
    """What `anyio.open_process` returns, for a child that never really runs."""

    pid = 1234
    returncode: int | None = None

    def __init__(self, calls: list[tuple[Any, ...]]) -> None:
        self._calls = calls

    def kill(self) -> None:
        self._calls.append(("kill", self.pid))
        self.returncode = 1

    async def wait(self) -> int:
        return 1


def launcher(api: StandIn) -> Any:
    async def launch(argv: Any, **options: Any) -> SuspendedChild:
        api.calls.append(("launch", argv, options["creationflags"]))
        return SuspendedChild(api.calls)
    return launch


def test_taskkill_is_the_seeds_call_with_the_retained_pid():
    assert taskkill_argv(1234, WINDOWS_ENV) == [r"C:\Windows\System32\taskkill.exe", "/PID", "1234", "/T", "/F"]
    assert taskkill_argv(1234, {"SYSTEMROOT": r"D:\Win"})[0] == r"D:\Win\System32\taskkill.exe"
    assert taskkill_argv(1234, {}) is None  # no guessed path: the job still ends the tree


async def test_the_child_is_in_its_job_before_it_runs_anything():
    api = StandIn()
    process, tree = await start_windows(["claude.exe", "-p"], launcher(api), api, WINDOWS_ENV, env={}, cwd=None)
    assert api.calls == [("create_job",), ("launch", ["claude.exe", "-p"], CREATE_NO_WINDOW | CREATE_SUSPENDED),
                         ("assign", JOB, 1234), ("resume", 1234)]
    assert tree.pid == process.pid == 1234


async def test_a_child_that_cannot_join_its_job_never_runs():
    api = StandIn(fail="assign")
    with pytest.raises(OSError, match="assign failed"):
        await start_windows(["claude.exe"], launcher(api), api, WINDOWS_ENV, env={}, cwd=None)
    names = [call[0] for call in api.calls]
    assert "resume" not in names
    assert names[names.index("assign"):] == ["assign", "terminate_job", "close", "kill"]


async def test_a_child_that_cannot_start_leaves_no_job_open():
    api = StandIn()

    async def missing(argv: Any, **options: Any) -> SuspendedChild:
        raise FileNotFoundError("claude.exe")

    with pytest.raises(FileNotFoundError):
        await start_windows(["claude.exe"], missing, api, WINDOWS_ENV, env={}, cwd=None)
    assert api.calls == [("create_job",), ("close", JOB)]


async def test_no_job_no_child():
    api = StandIn(fail="create_job")
    with pytest.raises(OSError, match="create_job failed"):
        await start_windows(["claude.exe"], launcher(api), api, WINDOWS_ENV, env={}, cwd=None)
    assert [call[0] for call in api.calls] == ["create_job"]


def test_a_stop_runs_taskkill_on_the_retained_pid_then_ends_the_job():
    api = StandIn()
    tree = WindowsTree(api, JOB, 1234, lambda: True, WINDOWS_ENV)
    assert tree.stop(forced=False) is True
    assert api.calls == [("run", [r"C:\Windows\System32\taskkill.exe", "/PID", "1234", "/T", "/F"]),
                         ("terminate_job", JOB)]
    assert not any("/IM" in call[1] for call in api.calls if call[0] == "run")  # never by image name
    assert tree.alive() is False and tree.stop(forced=True) is False
    tree.close()
    tree.close()
    assert api.calls[-1] == ("close", JOB) and api.calls.count(("close", JOB)) == 1


def test_once_the_root_has_exited_its_pid_is_not_ours_and_only_the_job_ends_the_rest():
    api = StandIn()
    tree = WindowsTree(api, JOB, 1234, lambda: False, WINDOWS_ENV)
    tree.stop(forced=True)
    assert api.calls == [("terminate_job", JOB)]


async def test_a_cancelled_caller_starts_nothing():
    launched = []

    async def launch(argv: Any, **options: Any) -> Any:
        launched.append(argv)
        raise AssertionError("started")

    with anyio.CancelScope() as scope:
        scope.cancel()
        await processes.start_child(["claude"], env={}, cwd=None, stderr=None, launch=launch)
    assert launched == []


def test_a_batch_file_runs_through_cmd_with_every_token_quoted():
    found = r"C:\Program Files\nodejs\npx.cmd"
    assert commands.windows_command("npx", ["-y", "@scope/server", "a b"], found) == \
        r'"C:\Program Files\nodejs\npx.cmd" "-y" "@scope/server" "a b"'
    assert commands.windows_command("node", ["server.js"], r"C:\node\node.exe") == [r"C:\node\node.exe", "server.js"]
    assert commands.windows_command("missing", ["x"], None) == ["missing", "x"]


@pytest.mark.parametrize("arg", ["a&b", "%PATH%", 'say "hi"', "x|y", "a^b", "(x)", "line\nbreak", "!v!", "<in"])
def test_arguments_cmd_would_interpret_are_refused_by_name(arg):
    with pytest.raises(commands.CommandRefused, match=r"argument 2 holds characters cmd\.exe") as refused:
        commands.windows_command("npx", ["-y", arg], r"C:\nodejs\npx.CMD")
    for character in set(arg) & commands.CMD_SPECIAL:
        assert (repr(character) if character in "\r\n" else character) in str(refused.value)


def test_a_batch_file_whose_path_cmd_would_interpret_is_refused_by_name():
    refused = r"the batch file's path holds characters cmd\.exe would interpret: ! %$"
    with pytest.raises(commands.CommandRefused, match=refused):
        commands.windows_command("npx", ["-y"], r"C:\Users\100%!\npx.cmd")


def test_windows_lines_for_a_person(monkeypatch):
    from hostlink.host.platform import console, folders, shell

    monkeypatch.setattr(sys, "platform", "win32")
    assert shell.set_variable_line("OPENAI_API_KEY", shell.file_contents(r"C:\Temp\key")) == \
        r'$env:OPENAI_API_KEY = (Get-Content -Raw "C:\Temp\key")'
    assert shell.set_variable_line("X", shell.literal("http://127.0.0.1:1")) == '$env:X = "http://127.0.0.1:1"'
    assert shell.variable_value("TOKEN") == "$env:TOKEN"
    roaming, local = os.path.abspath("/r/Roaming"), os.path.abspath("/r/Local")  # absolute on this system too
    environ = {"APPDATA": roaming, "LOCALAPPDATA": local, "XDG_CONFIG_HOME": "/x"}
    assert folders.config_home(environ) == folders.Path(roaming)
    assert folders.cache_home(environ) == folders.state_home(environ) == folders.Path(local)
    assert console.stop_name(console.CONSOLE_CLOSED) == "the console closing"
    assert console.exit_status(console.CONSOLE_CLOSED) == 1
