"""`hostlink mcp add|add-json|remove|get` against real files in a temporary HOME: round
trips give back the same bytes, refusals leave them untouched, a crash mid-write cannot
corrupt the file, and a secret is never written by accident nor shown. What the commands decide
runs in this process (hostlink_here); a real `hostlink` process runs the round trip through add,
add-json, status and remove, `get` and `reload`, and whatever is about the process (a crash
mid-write, edits from several processes at once, the commands under `llm`)."""

from __future__ import annotations

import json
import os
import stat
import sys

import pytest

from llm_support import LlmDirs, run_llm
from mcp_config_support import environment, hostlink, hostlink_here, seed, user_file

OTHERS = {"mcpServers": {"files": {"command": "npx", "args": ["-y", "@scope/files", "${ROOT:-.}"],
                                   "env": {"API_KEY": "${API_KEY}"}},
                         "remote": {"url": "https://mcp.example.com/mcp", "auth": "bearer",
                                    "bearerTokenEnv": "REMOTE_TOKEN", "requestTimeoutMs": 5000}}}
UNICODE = {"mcpServers": {"cafe": {"command": "café", "args": ["ü"]}}}
STYLES = {
    "two spaces": json.dumps(OTHERS, indent=2) + "\n",
    "four spaces, no newline": json.dumps(OTHERS, indent=4),
    "tabs": json.dumps(OTHERS, indent="\t") + "\n",
    "one line": json.dumps(OTHERS),
    "compact": json.dumps(OTHERS, separators=(",", ":")),
    "non-ASCII as written": json.dumps(UNICODE, indent=2, ensure_ascii=False) + "\n",
    "non-ASCII escaped": json.dumps(UNICODE, indent=2) + "\n",
}


@pytest.mark.parametrize("style", list(STYLES))
def test_add_get_remove_gives_back_the_same_bytes(tmp_path, style):
    path = seed(tmp_path, STYLES[style])
    before = path.read_bytes()

    added = hostlink_here(tmp_path, "mcp", "add", "fs", "--env", "TOKEN=${FS_TOKEN}", "--env", "DEBUG=1",
                     "--cwd", "/srv", "--", "npx", "-y", "@scope/fs", "--flag")
    assert added.returncode == 0, added.stderr
    assert f"added MCP server 'fs' to {path}" in added.stdout
    assert "FS_TOKEN is not set here" in added.stderr
    document = json.loads(path.read_text())
    assert list(document["mcpServers"])[-1] == "fs"  # the others stay first, in their order
    assert document["mcpServers"]["fs"] == {"command": "npx", "args": ["-y", "@scope/fs", "--flag"],
                                            "env": {"TOKEN": "${FS_TOKEN}", "DEBUG": "1"}, "cwd": "/srv"}

    shown = hostlink_here(tmp_path, "mcp", "get", "fs", "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout) == {"name": "fs", "source": str(path), "entry": document["mcpServers"]["fs"]}

    removed = hostlink_here(tmp_path, "mcp", "remove", "fs")
    assert removed.returncode == 0, removed.stderr
    assert path.read_bytes() == before


def test_url_and_json_entries_round_trip_and_load(tmp_path):
    path = seed(tmp_path, STYLES["two spaces"])
    before = path.read_bytes()
    assert hostlink(tmp_path, "mcp", "add", "gh", "--url", "https://api.example.com/mcp",
                    "--header", "X-Team: core", "--auth", "bearer", "--bearer-env", "GH_TOKEN").returncode == 0
    assert hostlink(tmp_path, "mcp", "add", "sso", "--url", "https://sso.example.com/mcp",
                    "--auth", "oauth", "--client-id", "hostlink-cli", "--tasks").returncode == 0
    piped = hostlink(tmp_path, "mcp", "add-json", "js", "-", stdin='{"command": "node", "args": ["s.js"],'
                                                                   ' "disabled": true}')
    assert piped.returncode == 0, piped.stderr
    servers = json.loads(path.read_text())["mcpServers"]
    assert servers["gh"] == {"url": "https://api.example.com/mcp", "headers": {"X-Team": "core"},
                             "auth": "bearer", "bearerTokenEnv": "GH_TOKEN"}
    assert servers["sso"] == {"url": "https://sso.example.com/mcp", "auth": "oauth",
                              "oauth": {"clientId": "hostlink-cli"}, "tasks": True}

    status = hostlink(tmp_path, "mcp", "status", "--json", env=environment(tmp_path, API_KEY="k"))  # it loads
    assert {entry["name"]: entry["error"] for entry in json.loads(status.stdout)} == {
        "files": None, "remote": None, "gh": None, "sso": None, "js": None}

    for name in ("js", "sso", "gh"):
        assert hostlink(tmp_path, "mcp", "remove", name).returncode == 0
    assert path.read_bytes() == before


REFUSED = [
    (["add", "k", "--env", "API_KEY=sk-live-123", "--", "srv"], '"API_KEY": "${API_KEY}"'),
    (["add", "k", "--env", "DB_PASSWORD=${X:-hunter2}", "--", "srv"], '"DB_PASSWORD": "${DB_PASSWORD}"'),
    (["add", "h", "--url", "https://a.example/mcp", "--header", "Authorization: Bearer abc123"],
     "--bearer-env MY_TOKEN"),
    (["add", "h", "--url", "https://a.example/mcp", "--header", "X-Api-Key: abc123"], '"${X_API_KEY}"'),
    (["add-json", "k", '{"command": "srv", "env": {"GITHUB_TOKEN": "ghp_abc"}}'], "${GITHUB_TOKEN}"),
    (["add", "h", "--url", "http://example.com/mcp"], "mcpServers.h.url: http is only allowed on a loopback"),
    (["add-json", "k", '{"command": "srv", "bogus": 1}'], "mcpServers.k.bogus: unknown field"),
    (["add-json", "k", '{"command": "srv", "url": "https://a.example"}'], "exactly one of"),
    (["add-json", "k", '{"url": "https://a.example", "type": "sse"}'], '"sse"'),
    (["add-json", "k", '{"command": "srv",'], "not valid JSON at line 1"),
    (["add-json", "k", "[]"], "must be a JSON object"),
    (["add", "bad name", "--", "srv"], "invalid server name"),
    (["add", "files", "--", "srv"], "'files' is already configured"),
    (["add", "k", "--url", "https://a.example/mcp", "--", "srv"], "exactly one of a command"),
    (["add", "k", "--env", "A=1", "--url", "https://a.example/mcp"], "--env and --cwd are for a command"),
    (["add", "k", "--url", "https://a.example/mcp", "--auth", "bearer"], "--auth bearer and --bearer-env"),
    (["add", "k", "--env", "NOEQUALS", "--", "srv"], "K=V"),
    (["add", "k", "--env", "1BAD=x", "--", "srv"], "mcpServers.k.env"),
    (["remove", "ghost"], "has no server named 'ghost'"),
    (["add-json", "k", '{"command": "!pass show token"}'], 'starting with "!"'),
    (["add-json", "k", '{"command": "srv", "env": {"A": "!cmd ${X}"}}'], 'starting with "!"'),
    (["add-json", "k", '{"url": "https://a.example/${X}", "bogus": "${X}"}'], "mcpServers.k.bogus: unknown field"),
]


@pytest.mark.parametrize(("argv", "said"), REFUSED)
def test_a_refused_edit_leaves_the_file_byte_identical(tmp_path, argv, said):
    path = seed(tmp_path, STYLES["four spaces, no newline"], mode=0o640)
    before, mtime = path.read_bytes(), path.stat().st_mtime_ns
    result = hostlink_here(tmp_path, "mcp", *argv, env=environment(tmp_path, X="1"))
    assert result.returncode == 2, result.stdout + result.stderr
    assert said in result.stderr
    assert "sk-live-123" not in result.stderr and "abc123" not in result.stderr and "hunter2" not in result.stderr
    assert path.read_bytes() == before and path.stat().st_mtime_ns == mtime
    assert sorted(p.name for p in path.parent.iterdir()) == ["mcp.json"]


def test_a_url_made_of_variables_is_checked_when_used(tmp_path):
    added = hostlink_here(tmp_path, "mcp", "add-json", "u", '{"url": "${MCP_URL}"}')
    assert added.returncode == 0, added.stderr
    assert "u: url depends on ${…} and is checked when the server is used" in added.stderr
    assert "MCP_URL is not set here" in added.stderr
    status = hostlink_here(tmp_path, "mcp", "status", "--json",
                      env=environment(tmp_path, MCP_URL="https://mcp.example.com/mcp"))
    assert json.loads(status.stdout)[0]["error"] is None


def test_a_broken_file_is_never_rewritten(tmp_path):
    path = seed(tmp_path, '{"mcpServers": {"a": {"command": "x"},}}')
    before = path.read_bytes()
    result = hostlink_here(tmp_path, "mcp", "add", "b", "--", "y")
    assert result.returncode == 2 and "invalid JSON at line 1" in result.stderr and "fix the file" in result.stderr
    assert path.read_bytes() == before
    shown = hostlink_here(tmp_path, "mcp", "get", "a", "--json")
    assert shown.returncode == 2 and json.loads(shown.stdout)["error"]["code"] == "invalid_config"
    assert "no readable configuration file has a server named 'a'" in json.loads(shown.stdout)["error"]["message"]


def test_reload_checks_the_files_as_a_running_hosts_reload_reads_them(tmp_path):
    """No CLI session outlives its command: `reload` reads the files as a reload would,
    says what a running host would take, and where reloading happens."""
    path = seed(tmp_path, json.dumps({"mcpServers": {"a": {"command": "x"}, "b": {"command": 1}}}))
    read = hostlink(tmp_path, "mcp", "reload")
    assert read.returncode == 0, read.stderr
    lines = read.stdout.splitlines()
    assert lines[0] == "the MCP configuration reads: 1 server(s): a"
    assert lines[1].startswith("b: misconfigured: ") and "command" in lines[1]
    assert "`hostlink mcp serve` takes it within a second by itself" in lines[2]
    assert "the mcp tool's action reload or `/mcp reload`" in lines[2]
    path.write_text('{"mcpServers": ')
    broken = hostlink(tmp_path, "mcp", "reload")
    assert broken.returncode == 2 and broken.stdout == ""
    assert "invalid MCP configuration" in broken.stderr and "invalid JSON at line 1" in broken.stderr


def test_literal_secrets_need_literal_and_get_never_shows_them(tmp_path):
    env = environment(tmp_path, API_KEY="expanded-secret-value")
    assert hostlink(tmp_path, "mcp", "add", "k", "--literal", "--env", "SERVICE_TOKEN=literal-secret-value",
                    "--env", "API_KEY=${API_KEY}", "--env", "MODE=fast", "--", "srv", env=env).returncode == 0
    assert json.loads(user_file(tmp_path).read_text())["mcpServers"]["k"]["env"]["SERVICE_TOKEN"] == \
        "literal-secret-value"
    for argv in (["get", "k"], ["get", "k", "--json"]):
        shown = hostlink(tmp_path, "mcp", *argv, env=env)
        assert shown.returncode == 0, shown.stderr
        assert "literal-secret-value" not in shown.stdout and "expanded-secret-value" not in shown.stdout
        assert "${API_KEY}" in shown.stdout and "fast" in shown.stdout and "not shown" in shown.stdout


def test_file_modes_new_and_kept(tmp_path):
    assert hostlink_here(tmp_path, "mcp", "add", "a", "--", "x").returncode == 0
    assert stat.S_IMODE(user_file(tmp_path).stat().st_mode) == 0o600
    assert stat.S_IMODE(user_file(tmp_path).parent.stat().st_mode) == 0o700
    user_file(tmp_path).chmod(0o644)
    assert hostlink_here(tmp_path, "mcp", "add", "b", "--", "y").returncode == 0
    assert stat.S_IMODE(user_file(tmp_path).stat().st_mode) == 0o644


def test_a_symlinked_config_stays_a_symlink(tmp_path):
    real = tmp_path / "dotfiles" / "mcp.json"
    real.parent.mkdir()
    real.write_text(STYLES["two spaces"])
    user_file(tmp_path).parent.mkdir(parents=True)
    user_file(tmp_path).symlink_to(real)
    assert hostlink_here(tmp_path, "mcp", "add", "a", "--", "x").returncode == 0
    assert user_file(tmp_path).is_symlink() and "a" in json.loads(real.read_text())["mcpServers"]


def test_project_scope_writes_mcp_json_in_the_working_directory(tmp_path):
    result = hostlink_here(tmp_path, "mcp", "add", "p", "--scope", "project", "--", "srv")
    assert result.returncode == 0, result.stderr
    project = tmp_path / "project" / ".mcp.json"
    assert json.loads(project.read_text()) == {"mcpServers": {"p": {"command": "srv"}}}
    assert not user_file(tmp_path).exists()
    shown = hostlink_here(tmp_path, "mcp", "get", "p")
    assert "not used: the project is not trusted" in shown.stdout
    assert "project is not trusted" not in hostlink_here(tmp_path, "mcp", "--trust-project", "get", "p").stdout
    assert "'p' is already configured" in hostlink_here(tmp_path, "mcp", "add", "p", "--scope", "project",
                                                   "--", "srv").stderr
    user_only = hostlink_here(tmp_path, "mcp", "remove", "p")
    assert user_only.returncode == 2 and f"it is configured in {project}" in user_only.stderr
    assert hostlink_here(tmp_path, "mcp", "remove", "p", "--scope", "project").returncode == 0
    assert json.loads(project.read_text()) == {"mcpServers": {}}


def test_shadowed_names_are_reported(tmp_path):
    shared = tmp_path / "config" / "mcp" / "mcp.json"
    shared.parent.mkdir(parents=True)
    shared.write_text('{"mcpServers": {"a": {"command": "old"}}}')
    added = hostlink_here(tmp_path, "mcp", "add", "a", "--", "new")
    assert f"this entry replaces the one in {shared}" in added.stderr
    assert json.loads(hostlink_here(tmp_path, "mcp", "get", "a", "--json").stdout)["entry"] == {"command": "new"}


def test_more_than_64_servers_over_all_files_are_refused(tmp_path):
    shared = tmp_path / "config" / "mcp" / "mcp.json"
    shared.parent.mkdir(parents=True)
    shared.write_text(json.dumps({"mcpServers": {f"s{i}": {"command": "x"} for i in range(64)}}))
    result = hostlink_here(tmp_path, "mcp", "add", "one-more", "--", "x")
    assert result.returncode == 2 and "more than 64 servers in all configuration files" in result.stderr
    assert not user_file(tmp_path).exists()


KILL_AT_RENAME = "import os, signal\nos.replace = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)"
FAIL_AT_RENAME = ("import os, errno\n"
                  "def refuse(*a, **k):\n    raise OSError(errno.EIO, os.strerror(errno.EIO))\n"
                  "os.replace = refuse")


def test_a_crash_between_temp_file_and_rename_leaves_the_original(tmp_path):
    path = seed(tmp_path, STYLES["two spaces"])
    before = path.read_bytes()

    killed = hostlink(tmp_path, "mcp", "add", "a", "--", "x", prelude=KILL_AT_RENAME)
    assert killed.returncode == -9
    assert path.read_bytes() == before
    left = [p for p in path.parent.iterdir() if p.name != "mcp.json"]
    assert len(left) == 1 and json.loads(left[0].read_text())["mcpServers"]["a"] == {"command": "x"}

    failed = hostlink(tmp_path, "mcp", "add", "a", "--", "x", prelude=FAIL_AT_RENAME)
    assert failed.returncode == 1
    assert f"cannot write {path} (Input/output error); the file is unchanged" in failed.stderr
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["mcp.json"]  # its own and the dead writer's

    assert hostlink(tmp_path, "mcp", "add", "a", "--", "x").returncode == 0
    assert "a" in json.loads(path.read_text())["mcpServers"]


SLOW_RENAME = ("import os, time\nrename = os.replace\n"
               "def slow(*a, **k):\n    time.sleep(0.5)\n    rename(*a, **k)\nos.replace = slow")


def test_edits_at_the_same_time_lose_nothing(tmp_path):
    import subprocess

    path = seed(tmp_path, STYLES["two spaces"])
    code = f"import sys\n{SLOW_RENAME}\nfrom hostlink.cli import main\nsys.argv[0] = 'hostlink'\nmain()"
    (tmp_path / "project").mkdir(exist_ok=True)
    running = [subprocess.Popen([sys.executable, "-c", code, "mcp", "add", f"s{i}", "--", "x"],
                                env=environment(tmp_path), cwd=tmp_path / "project", stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(4)]
    outputs = [process.communicate(timeout=60) for process in running]
    assert [process.returncode for process in running] == [0, 0, 0, 0], outputs
    assert set(json.loads(path.read_text())["mcpServers"]) == {"files", "remote", "s0", "s1", "s2", "s3"}
    assert any("waiting for another edit of" in err for _, err in outputs)
    assert sorted(p.name for p in path.parent.iterdir()) == ["mcp.json"]


def test_the_commands_are_mounted_under_llm(tmp_path):
    dirs = LlmDirs(tmp_path).create(mcp_config=None)
    source = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}  # this checkout
    added = run_llm(dirs, "mcp", "add", "demo", "--", sys.executable, "-m", "hostlink.demo", **source)
    assert added.returncode == 0, added.stderr
    shown = run_llm(dirs, "mcp", "get", "demo", "--json", **source)
    assert json.loads(shown.stdout)["entry"]["args"] == ["-m", "hostlink.demo"]
    wrong = run_llm(dirs, "mcp", "remove", "ghost", **source)
    assert wrong.returncode == 2 and wrong.stderr.startswith("llm mcp: ")
