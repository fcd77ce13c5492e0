"""A configuration edit in process: what it refuses and that a refused or empty edit leaves the
file as it was (the CLI tests add and remove entries end to end)."""

from __future__ import annotations

import json
import os

import pytest

from hostlink.mcp.config.edit import EditRefused, hide_secrets, open_file, save, with_entries, without_entry

TEXT = json.dumps({"mcpServers": {"demo": {"command": "demo"}}}, indent=2) + "\n"


@pytest.fixture
def config(tmp_path):
    path = tmp_path / "mcp.json"
    path.write_text(TEXT)
    os.utime(path, (1_000_000, 1_000_000))
    return path


def _untouched(path):
    return path.read_text() == TEXT and path.stat().st_mtime == 1_000_000


def test_an_edit_that_changes_nothing_leaves_the_file_untouched(config):
    file = open_file(config)
    assert save(file, with_entries(file, {"demo": {"command": "demo"}})) is False
    assert _untouched(config)
    assert save(file, with_entries(file, {"demo": {"command": "other"}})) is True
    assert json.loads(config.read_text())["mcpServers"]["demo"] == {"command": "other"}


def test_removing_a_server_the_file_does_not_have_is_refused(config):
    with pytest.raises(EditRefused) as refused:
        without_entry(open_file(config), "nosuch")
    assert str(refused.value) == f"{config}: no server named nosuch in this file"
    assert _untouched(config)


@pytest.mark.parametrize(("document", "message"), [
    ({"mcpServers": {"big": {"command": "x", "args": ["a" * 1024 * 1024]}}}, "the result would be larger than 1 MiB"),
    ({"mcpServers": {"demo": {"command": "demo"}}, "extra": 1}, "unknown top-level field"),
])
def test_an_edit_the_loader_would_refuse_is_refused_and_the_file_kept(config, document, message):
    with pytest.raises(EditRefused) as refused:
        save(open_file(config), document)
    assert message in str(refused.value) and str(config) in str(refused.value)
    assert _untouched(config)


def test_an_entry_shown_to_a_person_hides_literal_secrets_but_not_references():
    entry = {"command": "demo", "env": {"API_TOKEN": "sk-live-1", "KEY_REF": "${KEY}", "MODE": "fast"}}
    shown = hide_secrets(entry)
    assert shown["env"]["API_TOKEN"] != "sk-live-1" and "sk-live-1" not in json.dumps(shown)
    assert shown["env"]["MODE"] == "fast" and entry["env"]["API_TOKEN"] == "sk-live-1"  # a copy
    assert hide_secrets("not an entry") == "not an entry"


def test_an_edit_stopped_while_it_waits_for_another_leaves_nothing_open(config):
    from hostlink.mcp.config.edit import lock_for_edit

    def stopped() -> None:
        raise KeyboardInterrupt  # Ctrl-C at "waiting for another edit"

    def never() -> None:
        raise AssertionError("nothing holds the lock any more")

    release = lock_for_edit(config, never)
    before = sorted(os.listdir("/proc/self/fd"))
    try:
        with pytest.raises(KeyboardInterrupt):
            lock_for_edit(config, stopped)
        assert sorted(os.listdir("/proc/self/fd")) == before  # its descriptor of the directory is closed
    finally:
        release()
    lock_for_edit(config, never)()  # the lock is free for the next edit
    assert _untouched(config)
