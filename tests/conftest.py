"""Fixtures shared by several test folders, and the guard that tests stop every process they start.

A folder's own fixtures are in its conftest.py; plain helpers are in the flat *_support.py modules.

The pytest process, and each pytest-xdist worker, becomes a child subreaper, so whatever the
tests start stays its descendant even when orphaned. At the end of the run (and of each worker),
a descendant still running one of the programs the tests start (fixture servers, the demo server,
the npm and PyPI peers, a browser, the claude CLI, the proposal server) is a leak: it is killed,
reported by the main process, and the run fails.
"""

import ctypes
import itertools
import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from claude_transport_support import fa
from mcp_auth_support import FAKES, FakeOAuth, keyring_daemon_running, start_keyring_daemon
from mcp_runtime_support import ASKER, DEMO_HTTP, http_fixture
from process_support import started
from rerun_support import rerun_once_on
from serve_support import ServeProcess, start_server

_WATCHED = ("tests/fakes/", "tests/adversarial/", "serve_host.py", "hostlink.demo", "node_modules", "proposal_server",
            "claude", ".venv-servers", ".venv-crewai", "chromium")


_PR_SET_CHILD_SUBREAPER = 36

# litellm fetches a price list from the internet at import otherwise (the LiteLLM host, the
# import checks, DSPy), here and in every process the tests start: only loopback is reached.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture
def anyio_backend():
    """Async tests run on asyncio: the MCP runtime owns its connections in asyncio tasks."""
    return "asyncio"


@pytest.fixture
def runtime_dir(tmp_path, monkeypatch):
    """A fresh HOSTLINK_RUNTIME_DIR; the test fails if a private directory is left in it."""
    root = tmp_path / "runtime"
    monkeypatch.setenv("HOSTLINK_RUNTIME_DIR", str(root))
    yield root
    left = sorted(p.name for p in root.iterdir()) if root.exists() else []
    assert left == [], f"private state left behind: {left}"


# --- the fake Anthropic API and the claude child's HOME (claude_code, gateway, adapters, mcp) ----------


@pytest.fixture
def api():
    """The fake Anthropic Messages API on 127.0.0.1, for one test (the serve folders take one per module)."""
    with fa.FakeAnthropic() as fake:
        yield fake


@pytest.fixture
def home(tmp_path):
    """A throwaway HOME for the `claude` child."""
    path = tmp_path / "home"
    path.mkdir()
    return path


# --- MCP auth: the fake OAuth server, a real keyring, browser stubs (mcp, cli, gateway, adversarial) ---
# The keyring tests need the private Secret Service that ``scripts/with-keyring`` provides; outside
# CI they are skipped without it, in CI (``CI`` set) they fail.

BROWSERS = ("open", "xdg-open", "sensible-browser", "x-www-browser", "www-browser", "gnome-open", "kde-open")


_KEYRING_RESTARTS: list[str] = []  # the keyring tests that found the daemon gone, and its log


@pytest.fixture
def keyring_required(request):
    """The private Secret Service. One whose daemon is gone (it was seen once in CI, on a
    machine that installed packages beside the run; the keyring tests stop only their own
    restarts) is started again, and the run's summary says before which test, with the
    daemon's own log: infrastructure, not what these tests test."""
    if not os.environ.get("HOSTLINK_TEST_KEYRING_PASSWORD"):
        if os.environ.get("CI"):
            pytest.fail("CI must run these tests under scripts/with-keyring (a private Secret Service)")
        pytest.skip("needs scripts/with-keyring (private D-Bus + gnome-keyring)")
    if not keyring_daemon_running():
        log = Path(os.environ.get("HOSTLINK_TEST_KEYRING_LOG", "/nonexistent"))
        said = log.read_text(errors="replace")[-1500:].strip() if log.is_file() else "(no log)"
        start_keyring_daemon()
        _KEYRING_RESTARTS.append(f"{request.node.nodeid}: {said or '(its log is empty)'}")


# How each of hostlink's keyring errors begins (hostlink.mcp.auth.store, keyring_advice): a daemon gone mid-call
# shows as "unavailable", one another worker is starting again as "locked"; and the credential state a
# status shows then (`AuthManager.credential_state`).
_KEYRING_ERROR = "the OS keyring|'keyring unavailable'"


def pytest_collection_modifyitems(config, items):
    """A keyring test that failed because the shared daemon was gone runs once more, after
    `keyring_required` has started it again. gnome-keyring-daemon 42 has aborted under the
    parallel suite (a GLib assertion, `invoke_get_property_in_idle_cb`, with a client that had
    already left the bus), failing whichever keyring test was talking to it; the summary
    counts the rerun and says before which test the daemon was started again. A test that fails
    with a keyring error for any other reason fails again."""
    if hasattr(config, "workerinput"):  # a pytest-xdist worker: the order in which files are handed out
        _longest_first(config, items)
        _serial_where_scripts_test_finds_it(items)
    if not config.pluginmanager.hasplugin("rerunfailures"):  # pytest-rerunfailures: the test extra
        return
    for item in items:
        if "keyring_required" in getattr(item, "fixturenames", ()):
            item.add_marker(rerun_once_on(_KEYRING_ERROR))


def _longest_first(config, items) -> None:
    """Order the collection as tests/longest_first.txt says, the other files after them with the
    most tests first: pytest-xdist hands files out in this order (scripts/test turns off its own
    reordering, which goes by the number of tests only and so started a long one-test file last)."""
    listed = [line for line in (Path(__file__).parent / "longest_first.txt").read_text().splitlines()
              if line and not line.startswith("#")]
    gone = [path for path in listed if not (config.rootpath / path).is_file()]
    if gone:
        raise pytest.UsageError(f"tests/longest_first.txt names files that do not exist: {', '.join(gone)}")
    rank = {path: index for index, path in enumerate(listed)}
    per_file = Counter(item.nodeid.split("::")[0] for item in items)
    items.sort(key=lambda item: (rank.get(path := item.nodeid.split("::")[0], len(rank)), -per_file[path], path))


def _serial_where_scripts_test_finds_it(items) -> None:
    """scripts/test's serial part collects only the files whose text says `mark.serial`; a test
    marked serial some other way would run in neither part."""
    hidden = sorted({item.nodeid.split("::")[0] for item in items if item.get_closest_marker("serial")
                     and "mark.serial" not in item.path.read_text()})
    if hidden:
        raise pytest.UsageError(f"serial tests in files that do not say `mark.serial`: {', '.join(hidden)}")


@pytest.fixture
def no_browser(tmp_path, monkeypatch):
    """Browser launchers on PATH that record being run; a test fails if any was."""
    stubs = tmp_path / "browser-stubs"
    stubs.mkdir()
    marker = tmp_path / "browser-launched"
    for name in BROWSERS:
        script = stubs / name
        script.write_text(f"#!/bin/sh\necho {name} >> '{marker}'\nexit 1\n")
        script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{stubs}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("BROWSER", str(stubs / "xdg-open"))
    had_webbrowser = "webbrowser" in sys.modules
    yield
    assert not marker.exists(), f"a browser launcher was run: {marker.read_text()}"
    assert had_webbrowser or "webbrowser" not in sys.modules, "the webbrowser module was imported"


@pytest.fixture
def isolated_state(tmp_path, monkeypatch):
    """Lock files of each test in its own state dir."""
    state = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    return state


@pytest.fixture(scope="module")
def fake_oauth_server():
    """One fake OAuth server process per test module (each start costs ~0.7 s of CPU); tests take
    it through `fake_oauth`."""
    with started([sys.executable, str(FAKES / "fake_oauth_server.py")], stdout=subprocess.PIPE,
                 stderr=subprocess.DEVNULL, text=True) as proc:
        line = proc.stdout.readline()
        assert line, "the fake OAuth server did not start"
        yield FakeOAuth(proc, json.loads(line))


_FAKE_OAUTH_TESTS = itertools.count()


@pytest.fixture
def fake_oauth(fake_oauth_server):
    """The module's fake OAuth server, reset to a fresh server's state, with an MCP URL of this
    test's own: keyring entries and lock files are keyed by the URL, so no test sees another's."""
    return fake_oauth_server.reset(f"t{next(_FAKE_OAUTH_TESTS)}")


@pytest.fixture(scope="module")
def asker():
    """One asking server over HTTP for a module's tests about what hostlink does with its requests
    (a server per test costs ~0.7 s of CPU): each host or gateway opens a session of its own and
    the server keeps nothing between calls. Terminal tests run it over stdio, as a child of the CLI."""
    with http_fixture(script=ASKER) as server:
        yield server


@pytest.fixture(scope="module")
def web():
    """One SDK fixture server over HTTP for a module's tests that only ask it (a server per test
    costs ~0.7 s of CPU): each host opens a session of its own, its MCP endpoint keeps nothing a
    test leaves behind, and a test that counts requests asks at a path of its own (`/status/N/…`)
    or counts the difference its own calls made."""
    with http_fixture() as server:
        yield server


@pytest.fixture(scope="module")
def demo_http():
    """hostlink's demo server over HTTP, one for a module's tests of what a command decides with
    its answers (a stdio demo child per command costs ~0.8 s of CPU); it keeps nothing between sessions."""
    with http_fixture(script=DEMO_HTTP) as server:
        yield server


# --- hostlink serve as a process (serve, adversarial) ------------------------------------------------
# Both folders override ``api`` with one fake API per module: the module's server talks to it.


@pytest.fixture(scope="module")
def server(api, tmp_path_factory):
    """A module's `hostlink serve`; a module that needs other options overrides this fixture."""
    yield from start_server(api, tmp_path_factory)


@pytest.fixture
def fresh_script(api, server: ServeProcess):
    """An empty script for each test, and no claude left after it (modules use it for every test:
    `pytest.mark.usefixtures("fresh_script")`)."""
    while not api.script.empty():
        api.script.get_nowait()
    yield
    server.wait_no_claude()


# --- the guard -----------------------------------------------------------------------------------


def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every process that can be read."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                raw = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            found[int(entry)] = (parent, raw.replace(b"\0", b" ").decode("utf-8", "replace").strip())
    return found


def _descends_from(pid: int, ancestor: int, table: dict[int, tuple[int, str]]) -> bool:
    seen = set()
    while pid in table and pid not in seen:
        seen.add(pid)
        pid = table[pid][0]
        if pid == ancestor:
            return True
    return False


_BEFORE_SESSION: set[int] = set()  # the run's own helpers (scripts/with-keyring's daemon wrapper): no leak


def pytest_sessionstart(session):
    _BEFORE_SESSION.update(_processes())
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    # Ctrl-C reaches the suite as it reaches a program in a terminal, also when the suite was
    # started as a background job of a script, which starts with SIGINT ignored (so Python raises
    # no KeyboardInterrupt, and every program the tests start would inherit the ignoring): the
    # interrupt tests send SIGINT to this process's main thread and to the llm they start.
    signal.signal(signal.SIGINT, signal.default_int_handler)


_FROM_WORKERS: dict[str, str] = {}  # what the suite's worker processes (pytest-xdist) found


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """A worker's leaks reach the main process, which reports them and fails the run; so do
    its keyring restarts, which the main process reports."""
    output = getattr(node, "workeroutput", {})
    _FROM_WORKERS.update(output.get("leaked", {}))
    _KEYRING_RESTARTS.extend(output.get("keyring_restarts", []))


def pytest_terminal_summary(terminalreporter):
    for restart in _KEYRING_RESTARTS:
        terminalreporter.write_line(f"KEYRING DAEMON FOUND STOPPED, STARTED AGAIN before {restart}", yellow=True)


def pytest_sessionfinish(session, exitstatus):
    table = _processes()
    me = os.getpid()
    leaked = {
        str(pid): cmd
        for pid, (_, cmd) in table.items()
        if pid not in _BEFORE_SESSION and _descends_from(pid, me, table) and any(mark in cmd for mark in _WATCHED)
    }
    for pid in leaked:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # a worker: its exit status is not the run's, the main process says it
        workeroutput["leaked"] = leaked
        workeroutput["keyring_restarts"] = _KEYRING_RESTARTS
        return
    leaked.update(_FROM_WORKERS)
    if not leaked:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    for pid, cmd in sorted(leaked.items()):
        if reporter:
            reporter.write_line(f"LEAKED PROCESS {pid}: {cmd[:200]}", red=True)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
