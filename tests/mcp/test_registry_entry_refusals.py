"""What an entry built from the MCP registry refuses, and says, when a server.json is odd: a
package name no runtime accepts, a bundle URL that is not safe, malformed variable specs, a
repeated input that takes one value, an overlong value; and what it skips or shares."""

from __future__ import annotations

import pytest

from hostlink.mcp.registry.client import RegistryError
from hostlink.mcp.registry.entry import InputError, build_entry


def server(*packages, remotes=()):
    return {"name": "io.example/x", "version": "1.0.0", "packages": list(packages), "remotes": list(remotes)}


def npm(**fields):
    return {"registryType": "npm", "identifier": "x", "version": "1.0.0", **fields}


def build(record, given=None):
    return build_entry("x", record, None, given or {}, None, {})


def test_a_package_of_a_kind_hostlink_does_not_run_is_passed_over():
    record = server({"registryType": "cargo", "identifier": "x", "version": "1"}, "not an object", npm())
    assert build(record).entry == {"command": "npx", "args": ["-y", "x@1.0.0"]}


def test_a_package_name_its_runtime_would_not_accept_is_refused():
    with pytest.raises(RegistryError, match=r"\.identifier is not a valid npm package name$"):
        build(server(npm(identifier="Not/A Name")))


def test_a_bundle_url_that_is_not_safe_is_refused_before_any_download(tmp_path):
    bundle = {"registryType": "mcpb", "identifier": "http://example.com/x.mcpb", "fileSha256": "0" * 64}
    with pytest.raises(RegistryError, match=r"\.identifier is refused: "):
        build_entry("x", server(bundle), None, {}, None, {"XDG_STATE_HOME": str(tmp_path)})
    assert list(tmp_path.iterdir()) == []


def test_an_environment_variable_spec_that_is_not_an_object_is_refused():
    with pytest.raises(RegistryError, match=r"environmentVariables\[0\] must be an object$"):
        build(server(npm(environmentVariables=["PORT=1"])))


def test_a_repeated_input_for_one_environment_variable_is_refused():
    spec = {"name": "PORT", "isRepeated": True}
    with pytest.raises(RegistryError, match=r"environmentVariables\[0\]: PORT takes one value$"):
        build(server(npm(environmentVariables=[spec])), {"PORT": ["1", "2"]})


def test_an_input_over_1000_characters_is_refused():
    with pytest.raises(InputError, match=r"^the input PORT must not contain more than 1000 characters$"):
        build(server(npm(environmentVariables=[{"name": "PORT"}])), {"PORT": ["9" * 1001]})


def test_one_secret_used_twice_is_one_variable_to_set():
    secret = {"token": {"isSecret": True}}
    remote = {"type": "streamable-http", "url": "https://mcp.example.com/",
              "headers": [{"name": "Authorization", "value": "Bearer {token}", "variables": secret},
                          {"name": "X-Token", "value": "{token}", "variables": secret}]}
    built = build(server(remotes=[remote]))
    assert built.entry["headers"] == {"Authorization": "Bearer ${X_TOKEN}", "X-Token": "${X_TOKEN}"}
    assert built.secrets == ["X_TOKEN"]
