"""Configuration files at their edges: an imported file that is not an object (or whose servers
are not), a disabled entry whose unexpanded reference the schema refuses (listed, never used),
and a registry setting in hostlink's own file that cannot be read."""

from __future__ import annotations

import json

import pytest

from hostlink.mcp.config.importer import ImportFailed, read_source
from hostlink.mcp.config.load import load_config
from hostlink.mcp.registry.client import RegistryError, registry_from


@pytest.mark.parametrize(("document", "said"), [
    ([], "not a JSON object"), ({"mcpServers": ["a"]}, "mcpServers is not a JSON object")])
def test_an_imported_file_of_another_shape_is_refused_naming_it(tmp_path, document, said):
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ImportFailed, match=rf"^{path}: {said}$"):
        read_source("claude-desktop", path, tmp_path)


def user_file(tmp_path, servers):
    (tmp_path / "config" / "mcp").mkdir(parents=True)
    (tmp_path / "config" / "mcp" / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    return {"XDG_CONFIG_HOME": str(tmp_path / "config"), "HOME": str(tmp_path)}


def test_a_disabled_entry_the_schema_refuses_only_unexpanded_is_listed_as_disabled(tmp_path):
    environ = user_file(tmp_path, {"later": {"command": "srv", "cwd": "${NOT_SET}", "timeout": "${NOT_SET}",
                                             "disabled": True}})
    loaded = load_config(tmp_path, False, environ)
    assert loaded.servers["later"].disabled and loaded.servers["later"].transport == "stdio"
    assert loaded.broken == {}


def test_a_disabled_entry_with_both_a_command_and_a_url_is_still_misconfigured(tmp_path):
    environ = user_file(tmp_path, {"both": {"command": "srv", "url": "${URL}", "timeout": "${T}", "disabled": True}})
    loaded = load_config(tmp_path, False, environ)
    assert "both" not in loaded.servers
    assert loaded.broken == {"both": f"{tmp_path}/config/mcp/mcp.json: mcpServers.both: exactly one of "
                                     '"command" (stdio) or "url" (Streamable HTTP) is required'}


def test_a_registry_setting_in_a_file_that_is_not_json_is_a_clear_error(tmp_path):
    (tmp_path / "hostlink").mkdir()
    (tmp_path / "hostlink" / "mcp.json").write_text("{not json")
    with pytest.raises(RegistryError, match=r"^cannot read the registry setting: "):
        registry_from({"XDG_CONFIG_HOME": str(tmp_path), "HOME": str(tmp_path)})
