"""Config sources, precedence, project trust and file-level errors of hostlink.mcp.config.load."""

import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hostlink.mcp.config.load import ConfigError, load_config, parse_document
from hostlink.mcp.config.rules import NAME_PATTERN
from hostlink.mcp.config.schema import HttpServer, StdioServer


@pytest.fixture
def env(tmp_path):
    """An isolated environment: XDG_CONFIG_HOME and the project dir under tmp_path."""
    (tmp_path / "project").mkdir()
    return {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path / "home")}


def write(path: Path, servers: dict | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(servers if isinstance(servers, str) else json.dumps({"mcpServers": servers}))
    return path


def user_mcp(tmp_path):
    return tmp_path / "xdg" / "mcp" / "mcp.json"


def user_hostlink(tmp_path):
    return tmp_path / "xdg" / "hostlink" / "mcp.json"


def project_root(tmp_path):
    return tmp_path / "project" / ".mcp.json"


def project_hostlink(tmp_path):
    return tmp_path / "project" / ".hostlink" / "mcp.json"


def load(tmp_path, env, trusted):
    return load_config(tmp_path / "project", project_trusted=trusted, environ=env)


def test_no_files_is_an_empty_config(tmp_path, env):
    loaded = load(tmp_path, env, trusted=True)
    assert loaded.servers == {} and loaded.sources == {} and loaded.ignored_project_servers == []


def test_later_files_replace_whole_entries_in_order(tmp_path, env):
    write(user_mcp(tmp_path), {"a": {"command": "a1", "env": {"K": "v"}, "args": ["x"]},
                               "b": {"command": "b1"}})
    write(user_hostlink(tmp_path), {"a": {"command": "a2"}})
    write(project_root(tmp_path), {"b": {"url": "https://b.example/mcp"}})
    write(project_hostlink(tmp_path), {"c": {"command": "c1"}, "b": {"command": "b3"}})

    loaded = load(tmp_path, env, trusted=True)

    assert loaded.servers["a"] == StdioServer(command="a2")  # no env/args merged from the first file
    assert loaded.servers["b"] == StdioServer(command="b3")
    assert loaded.servers["c"] == StdioServer(command="c1")
    assert loaded.sources == {"a": user_hostlink(tmp_path), "b": project_hostlink(tmp_path),
                              "c": project_hostlink(tmp_path)}
    assert loaded.ignored_project_servers == []


def test_untrusted_project_can_neither_add_nor_override(tmp_path, env):
    write(user_mcp(tmp_path), {"a": {"command": "user-a"}})
    write(project_root(tmp_path), {"a": {"command": "evil"}, "d": {"command": "evil"}})
    write(project_hostlink(tmp_path), {"d": {"command": "evil"}, "e": {"url": "https://evil.example"}})

    loaded = load(tmp_path, env, trusted=False)

    assert loaded.servers == {"a": StdioServer(command="user-a")}
    assert loaded.sources == {"a": user_mcp(tmp_path)}
    assert loaded.ignored_project_servers == ["a", "d", "e"]


def test_untrusted_project_is_never_interpolated_nor_able_to_break_loading(tmp_path, env):
    write(user_mcp(tmp_path), {"a": {"command": "user-a"}})
    write(project_root(tmp_path), {"x": {"command": "${NOT_SET}"}, "y": {"bogus": 1}})
    write(project_hostlink(tmp_path), "{ not json")

    loaded = load(tmp_path, env, trusted=False)

    assert list(loaded.servers) == ["a"]
    assert loaded.ignored_project_servers == ["x", "y"]


def test_trusted_project_with_a_broken_entry_fails_that_server_closed_naming_the_file(tmp_path, env):
    write(user_mcp(tmp_path), {"a": {"command": "user-a"}, "x": {"command": "user-x"}})
    broken = write(project_hostlink(tmp_path), {"x": {"command": "x", "bogus": True}})
    loaded = load(tmp_path, env, trusted=True)
    assert loaded.broken == {"x": f"{broken}: mcpServers.x.bogus: unknown field"}
    assert list(loaded.servers) == ["a"]  # the broken entry still replaced the user's "x"
    assert loaded.sources["x"] == broken


def test_trusted_project_with_a_structurally_broken_file_fails_the_load(tmp_path, env):
    write(user_mcp(tmp_path), {"a": {"command": "user-a"}})
    broken = write(project_hostlink(tmp_path), {"x y": {"command": "x"}})
    with pytest.raises(ConfigError) as err:
        load(tmp_path, env, trusted=True)
    assert err.value.source == broken


def test_a_missing_variable_breaks_only_its_own_server(tmp_path, env):
    source = write(user_mcp(tmp_path), {
        "github": {"url": "https://api.example.com/mcp", "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}},
        "everything": {"command": "npx", "args": ["-y", "server-everything"]},
    })
    loaded = load(tmp_path, env, trusted=False)
    assert list(loaded.servers) == ["everything"]
    assert loaded.broken == {"github": f"{source}: mcpServers.github.headers.Authorization: "
                                       "environment variable GITHUB_TOKEN is not set"}


def test_a_later_good_entry_replaces_a_broken_one(tmp_path, env):
    write(user_mcp(tmp_path), {"a": {"command": "${UNSET}"}})
    write(user_hostlink(tmp_path), {"a": {"command": "fine"}})
    loaded = load(tmp_path, env, trusted=False)
    assert loaded.servers["a"].command == "fine" and loaded.broken == {}


def test_a_disabled_entry_is_never_expanded(tmp_path, env):
    write(user_mcp(tmp_path), {
        "gh": {"url": "${GH_URL}/mcp", "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}, "disabled": True},
        "cmd": {"command": "${TOOL_BIN}", "env": {"K": "${SECRET_K}"}, "disabled": True},
        "ok": {"command": "x"},
    })
    loaded = load(tmp_path, {**env, "GITHUB_TOKEN": "t-secret", "SECRET_K": "k"}, trusted=False)
    assert loaded.broken == {}
    assert loaded.servers["gh"].disabled and loaded.servers["gh"].transport == "http"
    assert loaded.servers["cmd"].disabled and loaded.servers["cmd"].env == {"K": "${SECRET_K}"}
    assert "t-secret" not in repr(loaded.servers)


def test_a_disabled_entry_still_meets_the_schema_where_no_reference_is_involved(tmp_path, env):
    source = write(user_mcp(tmp_path), {"off": {"command": "x", "bogus": 1, "disabled": True}})
    assert load(tmp_path, env, trusted=False).broken == {"off": f"{source}: mcpServers.off.bogus: unknown field"}


def test_broken_user_file_fails_the_whole_load(tmp_path, env):
    write(user_mcp(tmp_path), '{"mcpServers": {"a": {"command": "a",}}}')
    write(user_hostlink(tmp_path), {"b": {"command": "b"}})
    with pytest.raises(ConfigError, match=r"mcp/mcp\.json: invalid JSON at line 1 column 38: Expecting property name"):
        load(tmp_path, env, trusted=True)


def test_xdg_config_home_defaults_to_home_dot_config(tmp_path, env):
    home_file = write(tmp_path / "home" / ".config" / "hostlink" / "mcp.json", {"h": {"command": "h"}})
    for value in (None, "", "relative/dir"):
        environ = dict(env)
        if value is None:
            del environ["XDG_CONFIG_HOME"]
        else:
            environ["XDG_CONFIG_HOME"] = value
        loaded = load_config(tmp_path / "project", project_trusted=False, environ=environ)
        assert loaded.sources == {"h": home_file}


def test_environ_defaults_to_the_process_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOSTLINK_TEST_CMD", "from-env")
    write(user_mcp(tmp_path), {"a": {"command": "${HOSTLINK_TEST_CMD}"}})
    assert load_config(tmp_path, project_trusted=False).servers["a"].command == "from-env"
    doc = json.dumps({"mcpServers": {"a": {"command": "${HOSTLINK_TEST_CMD}"}}})
    assert parse_document(doc, tmp_path / "x.json")["a"].command == "from-env"


def test_an_existing_claude_style_mcp_json_works(tmp_path, env):
    # The shape other clients write: "type" keys, ${VAR} and ${VAR:-default}.
    write(project_root(tmp_path), """{
      "mcpServers": {
        "files": {"type": "stdio", "command": "npx",
                  "args": ["-y", "@modelcontextprotocol/server-filesystem", "${ROOT:-.}"],
                  "env": {"API_KEY": "${API_KEY}"}},
        "remote": {"type": "http", "url": "https://api.example.com/mcp",
                   "headers": {"Authorization": "Bearer ${API_KEY}"}},
        "other": {"type": "streamable-http", "url": "http://127.0.0.1:8931/mcp"}
      }
    }""")
    loaded = load_config(tmp_path / "project", True, {**env, "API_KEY": "k-123"})
    files, remote = loaded.servers["files"], loaded.servers["remote"]
    assert isinstance(files, StdioServer) and files.args[-1] == "." and files.env == {"API_KEY": "k-123"}
    assert isinstance(remote, HttpServer) and remote.headers == {"Authorization": "Bearer k-123"}
    assert loaded.servers["other"].url == "http://127.0.0.1:8931/mcp"


@pytest.mark.parametrize(("entry", "message"), [
    ({"type": "sse", "url": "https://x.example/sse"}, 'type: "sse" (the deprecated HTTP+SSE transport)'),
    ({"type": "http", "command": "x"}, 'type: "http" does not match command'),
    ({"type": "stdio", "url": "https://x.example"}, 'type: "stdio" does not match url'),
    ({"type": "websocket", "url": "https://x.example"}, 'type: must be "stdio", "http" or "streamable-http"'),
])
def test_type_key_must_agree_with_the_entry(entry, message):
    with pytest.raises(ConfigError, match="mcpServers.s." + re.escape(message)):
        parse_document(json.dumps({"mcpServers": {"s": entry}}), Path("f.json"), {})


def test_document_shape_errors(tmp_path):
    src = Path("/cfg/mcp.json")
    cases = {
        "[]": f'{src}: must be a JSON object with an "mcpServers" object',
        "{}": f"{src}: mcpServers: required, and must be a JSON object",
        '{"mcpServers": []}': f"{src}: mcpServers: required, and must be a JSON object",
        '{"servers": {}}': f'{src}: servers: unknown top-level field '
                           '(only "mcpServers", "$schema" and "registry" are allowed)',
        '{"registry": 1, "mcpServers": {}}': f"{src}: registry: must be a string (the URL of the MCP registry "
                                              "to search)",
        '{"mcpServers": {"a": 1}}': f"{src}: mcpServers.a: a server entry must be a JSON object",
        '{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}': f"{src}: duplicate key a in a JSON object",
        '{"mcpServers": {}, "mcpServers": {}}': f"{src}: duplicate key mcpServers in a JSON object",
        '{"mcpServers": {"a": {"command": "x", "requestTimeoutMs": NaN}}}':
            f"{src}: invalid JSON: NaN, Infinity or an oversized number",
        '{"mcpServers": {"a": {"command": "x", "requestTimeoutMs": ' + "9" * 5000 + "}}}":
            f"{src}: invalid JSON: NaN, Infinity or an oversized number",
        "[" * 100_000 + "]" * 100_000: f"{src}: invalid JSON: nested too deeply",
        '{\n  "mcpServers": {\n    "a": {"command": "x"\n  }\n}':
            f"{src}: invalid JSON at line 5 column 2: Expecting ',' delimiter",
    }
    for text, message in cases.items():
        with pytest.raises(ConfigError) as err:
            parse_document(text, src, {})
        assert str(err.value) == message


def test_empty_server_map_is_fine_and_bom_is_accepted(tmp_path, env):
    write(user_mcp(tmp_path), '{"mcpServers": {}}')
    user_hostlink(tmp_path).parent.mkdir(parents=True)
    user_hostlink(tmp_path).write_bytes(b'\xef\xbb\xbf{"mcpServers": {"a": {"command": "x"}}}')
    assert list(load(tmp_path, env, True).servers) == ["a"]


def test_invalid_utf8_is_refused(tmp_path, env):
    user_mcp(tmp_path).parent.mkdir(parents=True)
    user_mcp(tmp_path).write_bytes(b'{"mcpServers": {"a": {"command": "\xff"}}}')
    with pytest.raises(ConfigError, match=r"is not valid UTF-8 \(byte offset 34\)"):
        load(tmp_path, env, True)


def test_file_larger_than_one_mib_is_refused(tmp_path, env):
    doc = json.dumps({"mcpServers": {"a": {"command": "x"}}})
    write(user_mcp(tmp_path), doc + " " * (1024 * 1024 - len(doc)))
    assert list(load(tmp_path, env, True).servers) == ["a"]  # exactly 1 MiB is fine
    write(user_mcp(tmp_path), doc + " " * (1024 * 1024 - len(doc) + 1))
    with pytest.raises(ConfigError, match=r"mcp\.json: is larger than 1 MiB"):
        load(tmp_path, env, True)
    with pytest.raises(ConfigError, match="is larger than 1 MiB"):
        parse_document(doc + " " * (1024 * 1024), Path("x.json"), {})


def test_not_a_regular_file_is_refused_without_blocking(tmp_path, env):
    user_mcp(tmp_path).parent.mkdir(parents=True)
    os.mkfifo(user_mcp(tmp_path))  # opening a FIFO for reading would block forever
    with pytest.raises(ConfigError, match=r"mcp\.json: is not a regular file"):
        load(tmp_path, env, True)
    os.unlink(user_mcp(tmp_path))
    user_mcp(tmp_path).mkdir()
    with pytest.raises(ConfigError, match=r"mcp.json: (is not a regular file|cannot be read)"):
        load(tmp_path, env, True)


def test_untrusted_project_fifo_is_ignored(tmp_path, env):
    os.mkfifo(project_root(tmp_path))
    assert load(tmp_path, env, trusted=False).ignored_project_servers == []


def test_unreadable_file_is_refused(tmp_path, env):
    user_mcp(tmp_path).parent.mkdir(parents=True)
    user_mcp(tmp_path).symlink_to(user_mcp(tmp_path))  # a loop: os.open fails (ELOOP) even for root
    with pytest.raises(ConfigError, match=r"mcp.json: cannot be read \(Too many levels of symbolic links\)"):
        load(tmp_path, env, True)


def test_server_count_limits(tmp_path, env):
    write(user_mcp(tmp_path), {f"s{i}": {"command": "x"} for i in range(64)})
    assert len(load(tmp_path, env, True).servers) == 64
    write(user_mcp(tmp_path), {f"s{i}": {"command": "x"} for i in range(65)})
    with pytest.raises(ConfigError, match=r"mcp/mcp.json: mcpServers: more than 64 servers$"):
        load(tmp_path, env, True)
    # Overrides do not count twice; the merged total is limited too.
    write(user_mcp(tmp_path), {f"s{i}": {"command": "x"} for i in range(40)})
    write(user_hostlink(tmp_path), {f"s{i}": {"command": "y"} for i in range(20, 64)})
    assert len(load(tmp_path, env, True).servers) == 64
    write(project_root(tmp_path), {"extra": {"command": "z"}})
    with pytest.raises(ConfigError, match=r"\.mcp\.json: mcpServers: more than 64 servers in all"):
        load(tmp_path, env, True)
    assert len(load(tmp_path, env, False).servers) == 64


@pytest.mark.parametrize("name", ["a" * 64, "A-z_09", "-", "_"])
def test_valid_server_names(name):
    assert list(parse_document(json.dumps({"mcpServers": {name: {"command": "x"}}}), Path("f"), {})) == [name]


@pytest.mark.parametrize(("name", "shown"), [
    ("a" * 65, "'" + "a" * 64 + "'"), ("", "''"), ("a b", "'a b'"), ("a.b", "'a.b'"),
    ("caf\u00e9", r"'caf\xe9'"), ("x\x1b[31m", r"'x\x1b[31m'"), ("a/b", "'a/b'"),
])
def test_invalid_server_names_are_refused_and_shown_escaped(name, shown):
    with pytest.raises(ConfigError) as err:
        parse_document(json.dumps({"mcpServers": {name: {"command": "x"}}}), Path("f"), {})
    assert str(err.value) == f"f: mcpServers.{shown}: invalid server name (1-64 of A-Z a-z 0-9 _ -)"
    assert "\x1b" not in str(err.value)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode)
       | st.dictionaries(st.text(max_size=8), st.dictionaries(st.text(max_size=8), st.text(max_size=8)))
       .map(lambda d: json.dumps({"mcpServers": d}).encode()))
def test_arbitrary_project_bytes_never_break_an_untrusted_load(tmp_path, env, data):
    write(user_mcp(tmp_path), {"a": {"command": "user-a"}})
    project_root(tmp_path).write_bytes(data)
    loaded = load(tmp_path, env, trusted=False)
    assert list(loaded.servers) == ["a"]
    assert all(NAME_PATTERN.fullmatch(n) for n in loaded.ignored_project_servers)
    try:
        load(tmp_path, env, trusted=True)
    except ConfigError as err:
        assert err.source == project_root(tmp_path)


def test_a_path_with_control_characters_is_shown_escaped(tmp_path, env):
    project = tmp_path / "evil\x1b]0;x\x07dir"
    write(project / ".mcp.json", "{")
    with pytest.raises(ConfigError) as err:
        load_config(project, True, env)
    assert "\x1b" not in str(err.value) and "\\x1b]0;x\\x07dir" in str(err.value)
    assert err.value.source == project / ".mcp.json"


def test_the_schema_loads_only_when_there_is_an_entry_to_parse(tmp_path, env):
    """No configuration file: nothing to validate, so pydantic is never imported (status stays
    cheap); the first file brings the schema in."""
    import subprocess
    import sys

    probe = ("import sys; from pathlib import Path; from hostlink.mcp.config.load import load_config; "
             f"loaded = load_config(Path({str(tmp_path / 'project')!r}), True, {env!r}); "
             "print(sorted(loaded.servers), 'pydantic' in sys.modules)")

    def run() -> str:
        return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()

    assert run() == "[] False"
    write(tmp_path / "xdg" / "mcp" / "mcp.json", {"a": {"command": "a"}})
    assert run() == "['a'] True"
