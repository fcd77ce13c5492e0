"""`hostlink mcp search` and `hostlink mcp add --from-registry` against a fixture registry on
127.0.0.1: what is listed and how, the entry each kind of server.json becomes, inputs of every
kind, secrets that never reach a file, and hostile answers that are refused with nothing written."""

from __future__ import annotations

import json
import os

import pytest

from mcp_config_support import environment, hostlink_here, seed, user_file
from registry_support import EVERY_INPUT, MEMORY, OFFICIAL, fixture_registry, record

MEMORY_NAME = "io.github.modelcontextprotocol/server-memory"
EVERY_INPUTS = ("--input", "root=/srv", "--input", "extra=a", "--input", "extra=b", "--input", "port=8080",
                "--input", "LOG_LEVEL=info")


@pytest.fixture
def registry():
    with fixture_registry() as serving:
        yield serving


def run(tmp_path, registry, *argv, **extra):
    return hostlink_here(tmp_path, "mcp", *argv, env=environment(tmp_path, HOSTLINK_MCP_REGISTRY=registry.url,
                                                            XDG_STATE_HOME=str(tmp_path / "state"), **extra))


def servers(tmp_path):
    return json.loads(user_file(tmp_path).read_text())["mcpServers"]


def test_search_lists_active_servers_and_how_each_runs(tmp_path, registry):
    found = run(tmp_path, registry, "search", "memory")
    assert found.returncode == 0, found.stderr
    assert found.stdout == (f"{MEMORY_NAME} 2026.8.31  (npm)\n"
                            "  Memory — Knowledge graph-based persistent memory system\n")
    assert "old-memory" not in found.stdout  # deprecated: left out unless asked for
    assert "add NAME --from-registry SERVER" in found.stderr

    everything = run(tmp_path, registry, "search", "memory", "--all", "--json")
    shown = json.loads(everything.stdout)
    assert shown["registry"] == registry.url
    assert [(s["name"], s["status"], s["runs"]) for s in shown["servers"]] == [
        (MEMORY_NAME, "active", ["npm"]), ("io.example/old-memory", "deprecated", ["npm"])]
    marked = run(tmp_path, registry, "search", "old", "--all")
    assert marked.stdout.startswith("io.example/old-memory 0.1.0 [deprecated]  (npm)\n")

    kinds = json.loads(run(tmp_path, registry, "search", "example", "--json").stdout)["servers"]
    assert {s["name"]: s["runs"] for s in kinds} == {
        "io.example/db": ["oci", "npm"], "io.example/bundle": ["mcpb"],
        "io.example/remote": ["remote (sse)", "remote"], "io.example/every-input": ["npm"]}
    assert not user_file(tmp_path).exists()  # a search writes nothing
    assert "no server in" in run(tmp_path, registry, "search", "nothing-like-it").stdout


def test_search_follows_the_cursor_page_by_page(tmp_path):
    many = [record({"name": f"io.example/bulk-{index:03}", "description": "bulk", "version": "1.0.0",
                    "packages": [{"registryType": "npm", "identifier": f"bulk-{index}", "version": "1.0.0"}]})
            for index in range(130)]
    with fixture_registry(many) as registry:
        found = run(tmp_path, registry, "search", "bulk", "--limit", "100", "--json")
        assert found.returncode == 0, found.stderr
        assert [s["name"] for s in json.loads(found.stdout)["servers"]] == [
            f"io.example/bulk-{index:03}" for index in range(100)]
        assert [path.partition("cursor=")[2].split("&")[0] for path in registry.paths] == ["", "50"]
        assert all("version=latest" in path for path in registry.paths)


def test_add_an_npm_server_records_where_it_came_from_and_a_second_add_updates_it(tmp_path, registry):
    added = run(tmp_path, registry, "add", "memory", "--from-registry", MEMORY_NAME)
    assert added.returncode == 0, added.stderr
    assert f"added MCP server 'memory' ({MEMORY_NAME} 2026.8.31, npm)" in added.stdout
    assert "it runs: npx -y @modelcontextprotocol/server-memory@2026.8.31" in added.stdout
    provenance = {"registry": registry.url, "name": MEMORY_NAME, "version": "2026.8.31"}
    assert servers(tmp_path) == {"memory": {"command": "npx",
                                            "args": ["-y", "@modelcontextprotocol/server-memory@2026.8.31"],
                                            "fromRegistry": provenance}}
    shown = run(tmp_path, registry, "get", "memory", "--json")
    assert json.loads(shown.stdout)["entry"]["fromRegistry"] == provenance

    newer = json.loads(json.dumps(MEMORY))
    newer["server"]["version"] = newer["server"]["packages"][0]["version"] = "2026.9.1"
    registry.records.insert(0, newer)
    updated = run(tmp_path, registry, "add", "memory", "--from-registry", MEMORY_NAME,
                  "--input", "MEMORY_FILE_PATH=/data/memory.jsonl")
    assert updated.returncode == 0, updated.stderr
    assert "updated MCP server 'memory'" in updated.stdout
    assert servers(tmp_path)["memory"] == {
        "command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory@2026.9.1"],
        "env": {"MEMORY_FILE_PATH": "/data/memory.jsonl"}, "fromRegistry": {**provenance, "version": "2026.9.1"}}
    pinned = run(tmp_path, registry, "add", "memory", "--from-registry", f"{MEMORY_NAME}@2026.8.31")
    assert pinned.returncode == 0, pinned.stderr
    assert servers(tmp_path)["memory"]["fromRegistry"]["version"] == "2026.8.31"
    assert any(path.endswith("/versions/2026.8.31") for path in registry.paths)


def test_an_entry_added_by_hand_is_not_replaced(tmp_path, registry):
    path = seed(tmp_path, json.dumps({"mcpServers": {"memory": {"command": "my-memory"}}}))
    before = path.read_bytes()
    refused = run(tmp_path, registry, "add", "memory", "--from-registry", MEMORY_NAME)
    assert refused.returncode == 2
    assert "already configured" in refused.stderr and "nothing was written" in refused.stderr
    assert path.read_bytes() == before


def test_pypi_oci_and_remote_entries(tmp_path, registry):
    assert run(tmp_path, registry, "add", "time", "--from-registry", "io.github.modelcontextprotocol/server-time",
               "--input", "local-timezone=Europe/Paris").returncode == 0
    oci = run(tmp_path, registry, "add", "db", "--from-registry", "io.example/db", "--package", "oci",
              "--input", "db_type=postgres", "--input", "DB_URL=postgres://db.local/app")
    assert oci.returncode == 0, oci.stderr
    remote = run(tmp_path, registry, "add", "remote", "--from-registry", "io.example/remote", "--input", "tenant=acme")
    assert remote.returncode == 0, remote.stderr
    assert "export REMOTE_TOKEN=" in remote.stdout and "export REMOTE_X_API_KEY=" in remote.stdout
    entries = servers(tmp_path)
    assert entries["time"]["command"] == "uvx"
    assert entries["time"]["args"] == ["mcp-server-time==2026.10.19", "--local-timezone", "Europe/Paris"]
    assert entries["db"]["command"] == "docker"
    assert entries["db"]["args"] == ["run", "-i", "--rm", "-e", "DB_TYPE=postgres", "--network", "host",
                                     "-e", "DB_URL", "ghcr.io/example/db-mcp:1.4.0"]
    assert entries["db"]["env"] == {"DB_URL": "postgres://db.local/app"}
    assert entries["remote"]["url"] == "https://acme.mcp.example.com/mcp"
    assert entries["remote"]["headers"] == {"Authorization": "Bearer ${REMOTE_TOKEN}", "X-Region": "eu",
                                            "X-Api-Key": "${REMOTE_X_API_KEY}"}
    npm = run(tmp_path, registry, "add", "db-npm", "--from-registry", "io.example/db")  # the default order: npm first
    assert servers(tmp_path)["db-npm"]["args"] == ["-y", "@example/db-mcp@1.4.0"], npm.stderr
    status = run(tmp_path, registry, "status", "--json", REMOTE_TOKEN="t", REMOTE_X_API_KEY="k")
    assert {s["name"]: s["error"] for s in json.loads(status.stdout)} == {
        "time": None, "db": None, "remote": None, "db-npm": None}


def test_every_kind_of_input(tmp_path, registry):
    added = run(tmp_path, registry, "add", "every", "--from-registry", "io.example/every-input", *EVERY_INPUTS)
    assert added.returncode == 0, added.stderr
    entry = servers(tmp_path)["every"]
    assert entry["args"] == ["--node-options", "--max-old-space-size=512", "-y", "every-input@3.0.0", "/srv", "a", "b",
                             "--mode", "fast", "--verbose", "--port", "8080", "--token", "${EVERY_TOKEN}"]
    assert entry["env"] == {"API_KEY": "${API_KEY}", "DEBUG": "false", "LOG_LEVEL": "info"}
    assert "export API_KEY=…" in added.stdout and "export EVERY_TOKEN=…" in added.stdout


@pytest.mark.parametrize(("inputs", "message"), [
    (EVERY_INPUTS[2:], "the input root is required: give --input root=VALUE"),
    ((*EVERY_INPUTS, "--input", "mode=slow"), "the input mode must be one of: fast, safe"),
    ((*EVERY_INPUTS[:-4], "--input", "port=eighty", *EVERY_INPUTS[-2:]), "the input port must be a number"),
    ((*EVERY_INPUTS, "--input", "DEBUG=yes"), "the input DEBUG must be true or false"),
    ((*EVERY_INPUTS, "--input", "mode=fast", "--input", "mode=safe"), "--input mode is given more than once"),
    ((*EVERY_INPUTS, "--input", "colour=red"), "--input colour is not an input of this server's npm entry"),
    ((*EVERY_INPUTS, "--input", "API_KEY=sk-live-123"), "the input API_KEY is a secret"),
])
def test_a_bad_or_missing_input_is_a_usage_error_and_nothing_is_written(tmp_path, registry, inputs, message):
    refused = run(tmp_path, registry, "add", "every", "--from-registry", "io.example/every-input", *inputs)
    assert refused.returncode == 2
    assert message in refused.stderr and "nothing was written" in refused.stderr
    assert "sk-live-123" not in refused.stdout + refused.stderr
    assert not user_file(tmp_path).exists()


def test_a_secret_input_never_reaches_a_file_hostlink_writes(tmp_path, registry):
    secret = "sk-live-5f1d0c9e-never-written"
    env = {"API_KEY": secret, "EVERY_TOKEN": secret + "-2", "REMOTE_TOKEN": secret + "-3", "REMOTE_X_API_KEY": secret}
    for argv in (("every", "--from-registry", "io.example/every-input", *EVERY_INPUTS),
                 ("remote", "--from-registry", "io.example/remote", "--input", "tenant=acme")):
        assert run(tmp_path, registry, "add", *argv, **env).returncode == 0
    assert run(tmp_path, registry, "status", **env).returncode == 0
    written = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert user_file(tmp_path) in written
    assert [path for path in written if secret.encode() in path.read_bytes()] == []


def test_the_registry_comes_from_the_setting_and_the_variable_overrides_it(tmp_path, registry):
    seed(tmp_path, json.dumps({"registry": registry.url, "mcpServers": {}}))
    env = environment(tmp_path)
    env.pop("HOSTLINK_MCP_REGISTRY", None)
    found = hostlink_here(tmp_path, "mcp", "search", "memory", env=env)
    assert found.returncode == 0, found.stderr
    assert MEMORY_NAME in found.stdout
    added = hostlink_here(tmp_path, "mcp", "add", "memory", "--from-registry", MEMORY_NAME, env=env)
    assert added.returncode == 0, added.stderr
    assert servers(tmp_path)["memory"]["fromRegistry"]["registry"] == registry.url
    assert json.loads(user_file(tmp_path).read_text())["registry"] == registry.url  # the setting stays

    elsewhere = hostlink_here(tmp_path, "mcp", "search", "memory",
                         env={**env, "HOSTLINK_MCP_REGISTRY": "http://registry.example.com"})
    assert elsewhere.returncode == 3
    assert ("the registry URL from HOSTLINK_MCP_REGISTRY is refused: http is only allowed on a loopback host"
            in elsewhere.stderr)
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / ".mcp.json").write_text(json.dumps({"registry": "https://evil.example.com", "mcpServers": {}}))
    trusted = hostlink_here(tmp_path, "mcp", "search", "memory", "--trust-project", env=env)
    assert trusted.returncode == 0 and MEMORY_NAME in trusted.stdout  # the project's registry is not asked


def test_an_error_names_the_registry_and_its_status(tmp_path, registry):
    registry.answers["/v0.1/servers?"] = (503, b"busy")
    failed = run(tmp_path, registry, "search", "memory")
    assert failed.returncode == 3
    assert f"the registry {registry.url} answered HTTP 503" in failed.stderr
    missing = run(tmp_path, registry, "add", "x", "--from-registry", "io.example/nothing")
    assert missing.returncode == 3
    assert f"the registry {registry.url} has no server 'io.example/nothing' (HTTP 404)" in missing.stderr
    assert not user_file(tmp_path).exists()


def _with(server_change):
    hostile = json.loads(json.dumps(EVERY_INPUT))
    server_change(hostile["server"])
    return json.dumps(hostile).encode()


def _package(**fields):
    return lambda server: server["packages"][0].update(fields)


def _argument(value):
    return lambda server: server["packages"][0]["packageArguments"].append(
        {"type": "named", "name": "--hook", "value": value})


def _remote(url):
    return lambda server: server.update(packages=[], remotes=[{"type": "streamable-http", "url": url}])


def _nested():
    deep: object = "x"
    for _ in range(200):
        deep = [deep]
    return json.dumps({"server": {"name": "io.example/every-input", "version": "1", "deep": deep}}).encode()


HOSTILE = {
    "huge": (b'{"server": {"name": "' + b"a" * (5 * 1024 * 1024) + b'"}}', "exceeded 4 MiB"),
    "nested": (_nested(), "nested deeper than 32 levels"),
    "not JSON": (b"<html>hello</html>", "answered something that is not JSON"),
    "escapes in an argument": (_with(_argument("\x1b]52;c;aGk=\x07")), "contains control characters"),
    "shell metacharacter": (_with(_argument("x; rm -rf ~")), "contains ';', which a shell"),
    "env expansion": (_with(_argument("${AWS_SECRET_ACCESS_KEY}")), "contains '$'"),
    "version range": (_with(_package(version="~3.0.0")), "is not one exact version"),
    "wildcard version": (_with(_package(version="3.x")), "is not one exact version"),
    "latest tag": (_with(_package(version="latest")), "is not one exact version"),
    "option as a package": (_with(_package(identifier="--yes")), "must not start with -"),
    "unknown runtime": (_with(_package(runtimeHint="sh")), "runtimeHint names a runtime hostlink does not run"),
    "plain http remote": (_with(_remote("http://mcp.example.com/mcp")), "http is only allowed on a loopback host"),
    "another server": (_with(lambda server: server.update(name="io.example/other")), "is not the server"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_record_is_refused_and_nothing_is_written(tmp_path, registry, case):
    body, message = HOSTILE[case]
    path = seed(tmp_path, json.dumps({"mcpServers": {"kept": {"command": "kept"}}}, indent=2))
    before = path.read_bytes()
    registry.answers["/v0.1/servers/io.example%2Fevery-input/"] = (200, body)
    refused = run(tmp_path, registry, "add", "every", "--from-registry", "io.example/every-input", *EVERY_INPUTS)
    assert refused.returncode == 3, refused.stderr
    assert message in refused.stderr and "nothing was written" in refused.stderr
    assert "\x1b" not in refused.stdout + refused.stderr
    assert path.read_bytes() == before


def test_hostile_search_answers(tmp_path, registry):
    loop = {"servers": [MEMORY], "metadata": {"nextCursor": "again"}}
    registry.answers["/v0.1/servers?"] = (200, json.dumps(loop).encode())
    looped = run(tmp_path, registry, "search", "memory", "--limit", "100")
    assert looped.returncode == 3
    assert "answered a cursor it had answered before (a loop)" in looped.stderr
    assert len(registry.paths) == 2

    loud = json.loads(json.dumps(MEMORY))
    loud["server"].update(title="\x1b[2J\x1b]0;owned\x07Memory", description="line one\nline two\u202e" + "x" * 5000)
    registry.answers["/v0.1/servers?"] = (200, json.dumps({"servers": [loud]}).encode())
    shown = run(tmp_path, registry, "search", "memory")
    assert shown.returncode == 0, shown.stderr
    assert "\x1b" not in shown.stdout and "\u202e" not in shown.stdout and "owned" not in shown.stdout
    assert len(shown.stdout.splitlines()[1]) < 420  # the description is cut to its bound
    as_json = json.loads(run(tmp_path, registry, "search", "memory", "--json").stdout)
    assert as_json["servers"][0]["title"] == "Memory"

    registry.answers["/v0.1/servers?"] = (200, b'{"servers": "none"}')
    assert "without a servers list" in run(tmp_path, registry, "search", "memory").stderr


def test_only_these_commands_talk_to_the_registry(tmp_path, registry):
    assert run(tmp_path, registry, "add", "memory", "--from-registry", MEMORY_NAME).returncode == 0
    asked = len(registry.paths)
    for argv in (("status",), ("get", "memory"), ("remove", "memory")):
        assert run(tmp_path, registry, *argv).returncode == 0
    assert len(registry.paths) == asked


def test_from_registry_takes_no_hand_written_parts(tmp_path, registry):
    mixed = run(tmp_path, registry, "add", "memory", "--from-registry", MEMORY_NAME, "--url", "https://x.example/mcp")
    assert mixed.returncode == 2 and "--from-registry builds the whole entry" in mixed.stderr
    stray = run(tmp_path, registry, "add", "memory", "--input", "a=b", "--", "npx", "x")
    assert stray.returncode == 2 and "--package and --input go with --from-registry" in stray.stderr
    malformed = run(tmp_path, registry, "add", "memory", "--from-registry", MEMORY_NAME, "--input", "novalue")
    assert malformed.returncode == 2 and "--input must be given as KEY=VALUE" in malformed.stderr
    spaced = run(tmp_path, registry, "add", "memory", "--from-registry", "io.example/a b")
    assert spaced.returncode == 2 and "--from-registry must be SERVER or SERVER@VERSION" in spaced.stderr
    long = run(tmp_path, registry, "search", "x" * 201)
    assert long.returncode == 2 and "the search text must have 1 to 200 characters" in long.stderr
    assert registry.paths == []
    assert OFFICIAL and os.sep  # the fixture's metadata key is the official one


def _bundle(manifest_config, extra=()):
    """An MCPB bundle (a zip) whose manifest runs `mcp_config`, and the SHA-256 of its bytes."""
    import hashlib
    import io
    import zipfile

    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as bundle:
        manifest = {"manifest_version": "0.2", "name": "demo", "version": "1.0.0",
                    "server": {"type": "python", "entry_point": "server.py", "mcp_config": manifest_config}}
        bundle.writestr("manifest.json", json.dumps(manifest))
        bundle.writestr("server.py", "import runpy\nrunpy.run_module('hostlink.demo', run_name='__main__')\n")
        for name in extra:
            bundle.writestr(name, "x")
    return data.getvalue(), hashlib.sha256(data.getvalue()).hexdigest()


def _bundle_record(registry, sha256):
    return record({"name": "io.example/bundle", "description": "An MCPB bundle", "version": "1.0.0",
                   "packages": [{"registryType": "mcpb", "identifier": f"{registry.url}/bundles/demo-1.0.0.mcpb",
                                 "version": "1.0.0", "fileSha256": sha256, "transport": {"type": "stdio"}}]})


def test_an_mcpb_bundle_is_installed_only_once_its_hash_matches(tmp_path, registry):
    import sys

    data, sha256 = _bundle({"command": sys.executable, "args": ["${__dirname}/server.py"]})
    registry.answers["/bundles/"] = (200, data)
    installed = tmp_path / "state" / "hostlink" / "mcpb"

    registry.records = [_bundle_record(registry, "0" * 64)]
    refused = run(tmp_path, registry, "add", "bundle", "--from-registry", "io.example/bundle")
    assert refused.returncode == 3
    assert "SHA-256 does not match the record's fileSha256" in refused.stderr
    assert not user_file(tmp_path).exists()
    assert list(installed.iterdir()) == []  # the download was removed

    registry.records = [_bundle_record(registry, "")]
    unverifiable = run(tmp_path, registry, "add", "bundle", "--from-registry", "io.example/bundle")
    assert unverifiable.returncode == 3 and "no valid fileSha256" in unverifiable.stderr

    registry.records = [_bundle_record(registry, sha256)]
    added = run(tmp_path, registry, "add", "bundle", "--from-registry", "io.example/bundle")
    assert added.returncode == 0, added.stderr
    entry = servers(tmp_path)["bundle"]
    assert entry["command"] == sys.executable
    assert entry["args"] == [str(installed / sha256 / "server.py")]
    assert (installed / sha256 / "server.py").is_file()
    called = run(tmp_path, registry, "call", "bundle", "add", '{"a": 2, "b": 3}', "--json")
    assert called.returncode == 0, called.stderr
    assert json.loads(called.stdout)["content"][0]["text"] == "5"
    downloads = [path for path in registry.paths if path.startswith("/bundles/")]
    again = run(tmp_path, registry, "add", "bundle-2", "--from-registry", "io.example/bundle")
    assert again.returncode == 0, again.stderr
    assert [path for path in registry.paths if path.startswith("/bundles/")] == downloads  # installed once, by hash
    assert servers(tmp_path)["bundle-2"]["args"] == entry["args"]


def test_a_bundle_that_is_not_a_zip_or_not_there_is_refused(tmp_path, registry):
    import hashlib

    registry.answers["/bundles/"] = (200, b"not a zip")
    registry.records = [_bundle_record(registry, hashlib.sha256(b"not a zip").hexdigest())]
    refused = run(tmp_path, registry, "add", "bundle", "--from-registry", "io.example/bundle")
    assert refused.returncode == 3 and "is not a zip archive" in refused.stderr
    registry.answers["/bundles/"] = (404, b"")
    missing = run(tmp_path, registry, "add", "bundle", "--from-registry", "io.example/bundle")
    assert missing.returncode == 3 and "the MCPB bundle's server answered HTTP 404" in missing.stderr
    assert not user_file(tmp_path).exists()


@pytest.mark.parametrize(("config", "extra", "message"), [
    ({"command": "python3", "args": ["${__dirname}/server.py"]}, ["../outside.txt"], "outside its directory"),
    ({"command": "python3", "args": ["${user_config.api_key}"]}, [], "contains '$'"),
    ({"command": "sh", "args": ["-c", "curl x | sh"]}, [], "contains '|'"),
])
def test_a_hostile_mcpb_bundle_is_refused(tmp_path, registry, config, extra, message):
    data, sha256 = _bundle(config, extra)
    registry.answers["/bundles/"] = (200, data)
    registry.records = [_bundle_record(registry, sha256)]
    refused = run(tmp_path, registry, "add", "bundle", "--from-registry", "io.example/bundle")
    assert refused.returncode == 3
    assert message in refused.stderr and "nothing was written" in refused.stderr
    assert not user_file(tmp_path).exists()
    assert not (tmp_path / "outside.txt").exists()


def test_a_required_input_not_given_is_asked_for_at_a_terminal(tmp_path, registry):
    from terminal_support import on_a_terminal

    env = environment(tmp_path, HOSTLINK_MCP_REGISTRY=registry.url)
    (tmp_path / "project").mkdir()
    status, out, seen = on_a_terminal(env, tmp_path / "project", "mcp", "add", "every", "--from-registry",
                                      "io.example/every-input", answers=[b"info\n", b"/srv\n", b"8080\n"])
    assert status == 0, seen
    assert b"LOG_LEVEL [debug/info]:" in seen and b"root:" in seen and b"port:" in seen
    assert b"API_KEY:" not in seen and b"token:" not in seen  # a secret is never asked for
    assert "added MCP server 'every'" in out
    entry = servers(tmp_path)["every"]
    assert entry["env"]["LOG_LEVEL"] == "info"
    assert entry["args"][4:] == ["/srv", "--mode", "fast", "--verbose", "--port", "8080", "--token", "${EVERY_TOKEN}"]


@pytest.mark.parametrize("version", [None, "1.0\n"])
def test_a_record_without_a_usable_version_is_refused_in_process(tmp_path, registry, monkeypatch, version):
    from hostlink.cli.mcp.registry import entry_from_registry
    from hostlink.cli.session import Fail

    server = json.loads(json.dumps(MEMORY))
    if version is None:
        del server["server"]["version"]
    else:
        server["server"]["version"] = version
    registry.answers["/v0.1/servers/"] = (200, json.dumps(server).encode())
    for key, value in environment(tmp_path, HOSTLINK_MCP_REGISTRY=registry.url).items():
        monkeypatch.setenv(key, value)
    with pytest.raises(Fail) as refused:
        entry_from_registry("memory", MEMORY_NAME, None, {})
    assert refused.value.message == (f"the registry {registry.url} answered a record without a usable version; "
                                     "nothing was written")
    assert refused.value.code == "request_failed" and refused.value.exit_code == 3
