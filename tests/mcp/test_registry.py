"""The registry client and the entry builder in process: where the registry is, what each
failure says, and the server.json shapes the CLI tests do not reach."""

from __future__ import annotations

import json

import anyio
import pytest

from hostlink.mcp.registry import client
from hostlink.mcp.registry.client import OFFICIAL_REGISTRY, Registry, RegistryError, get_json, registry_from
from hostlink.mcp.registry.entry import InputError, build_entry
from hostlink.mcp.registry.records import listing_of
from registry_support import fixture_registry


def _environ(tmp_path, **extra):
    return {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "XDG_STATE_HOME": str(tmp_path / "state"), **extra}


def _setting(tmp_path, value):
    path = tmp_path / "config" / "hostlink" / "mcp.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"registry": value, "mcpServers": {}}))


def test_the_registry_is_the_variable_then_the_setting_then_the_official_one(tmp_path):
    assert registry_from(_environ(tmp_path)) == Registry(OFFICIAL_REGISTRY, "the default")
    _setting(tmp_path, "https://registry.example.com/")
    assert registry_from(_environ(tmp_path)).url == "https://registry.example.com"
    chosen = registry_from(_environ(tmp_path, HOSTLINK_MCP_REGISTRY="https://sub.example.com"))
    assert chosen == Registry("https://sub.example.com", "HOSTLINK_MCP_REGISTRY")


@pytest.mark.parametrize(("value", "message"), [
    ("https://registry.example.com/?tenant=a", "must not contain a query"),
    ("ftp://registry.example.com", "URL scheme must be https"),
    ("https://user:pw@registry.example.com", "must not contain userinfo"),
])
def test_a_bad_registry_url_is_refused_naming_where_it_came_from(tmp_path, value, message):
    _setting(tmp_path, value)
    with pytest.raises(RegistryError, match=message) as refused:
        registry_from(_environ(tmp_path))
    assert "the registry setting of" in str(refused.value) and "pw" not in str(refused.value)


def test_a_setting_that_is_not_a_string_is_refused(tmp_path):
    _setting(tmp_path, 42)
    with pytest.raises(RegistryError, match=r"the registry setting of .* is refused: must be a string"):
        registry_from(_environ(tmp_path))


def test_an_unreachable_registry_and_a_silent_one(monkeypatch):
    with pytest.raises(RegistryError, match=r"the registry http://127.0.0.1:9 could not be reached \(ConnectError\)"):
        anyio.run(get_json, Registry("http://127.0.0.1:9", "test"), "/v0.1/servers")
    monkeypatch.setattr(client, "REQUEST_SECONDS", 0.3)
    with fixture_registry() as registry:
        registry.delay = 2.0
        with pytest.raises(RegistryError, match=r"did not answer within 0\.3 s"):
            anyio.run(get_json, Registry(registry.url, "test"), "/v0.1/servers")


def _package(**fields):
    return {"name": "io.example/x", "version": "1.0.0",
            "packages": [{"registryType": "npm", "identifier": "x", "version": "1.0.0", **fields}]}


def _build(server, wanted=None, given=None):
    return build_entry("x", server, wanted, given or {}, None, {})


def test_runtimes_and_exact_versions():
    assert _build(_package(runtimeHint="npx")).entry == {"command": "npx", "args": ["-y", "x@1.0.0"]}
    nuget = {"name": "n", "packages": [{"registryType": "nuget", "identifier": "Contoso.Mcp", "version": "2.1.0",
                                        "packageArguments": [{"type": "positional", "value": "serve"}]}]}
    assert _build(nuget).entry == {"command": "dnx", "args": ["Contoso.Mcp@2.1.0", "--yes", "serve"]}
    oci = {"name": "o", "packages": [{"registryType": "oci", "identifier": "docker.io/acme/mcp", "version": "3.2.1"}]}
    assert _build(oci).entry["args"] == ["run", "-i", "--rm", "docker.io/acme/mcp:3.2.1"]
    untagged = {"name": "o", "packages": [{"registryType": "oci", "identifier": "docker.io/acme/mcp"}]}
    with pytest.raises(RegistryError, match="must be a string"):
        _build(untagged)


@pytest.mark.parametrize(("server", "message"), [
    (_package(transport={"type": "streamable-http", "url": "http://localhost:8080/mcp"}), "only a stdio package"),
    (_package(packageArguments=[{"type": "named", "name": "--a b"}]), "must be an option name"),
    (_package(packageArguments=[{"type": "flag"}]), "must be an object of type positional or named"),
    (_package(packageArguments=[{"type": "positional", "value": "{missing}"}]), "does not define"),
    (_package(packageArguments="--all"), "must be a list of at most 64 items"),
    (_package(environmentVariables=[{"name": "1BAD", "value": "x"}]), "is not an environment variable name"),
    (_package(environmentVariables=[{"name": "A", "default": "x", "format": "colour"}]), "has an unknown format"),
    ({"name": "s", "remotes": [{"type": "sse", "url": "https://x.example/sse"}]}, "offers no package or Streamable"),
    ({"name": "r", "remotes": [{"type": "streamable-http", "url": "https://{host}/mcp", "variables": "x"}]},
     "must be an object of at most 64 inputs"),
])
def test_records_that_cannot_be_run_safely_are_refused(server, message):
    with pytest.raises(RegistryError, match=message):
        _build(server)


def test_the_kind_asked_for_must_be_offered():
    with pytest.raises(RegistryError, match="offers no pypi package; it offers: npm"):
        _build(_package(), wanted="pypi")


def test_a_secret_variable_of_a_remote_url_stays_a_reference():
    server = {"name": "r", "remotes": [{"type": "streamable-http", "url": "https://mcp.example.com/{key}/mcp",
                                        "variables": {"key": {"isSecret": True}}}]}
    built = _build(server)
    assert built.entry == {"url": "https://mcp.example.com/${X_KEY}/mcp"}
    assert built.secrets == ["X_KEY"]


def test_a_variable_needs_exactly_one_value():
    server = _package(packageArguments=[{"type": "positional", "value": "--db={db}", "variables": {"db": {}}}])
    with pytest.raises(InputError, match="the input db needs one value"):
        _build(server)
    assert _build(server, given={"db": ["main"]}).entry["args"][-1] == "--db=main"


def test_a_record_without_a_name_is_not_listed():
    assert listing_of({"server": {"name": "  "}}) is None
    assert listing_of(["not", "a", "record"]) is None
    assert listing_of({"server": {"name": "a/b", "version": 3, "title": None}}).version == ""
