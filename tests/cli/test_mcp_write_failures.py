"""`hostlink mcp trust` / `untrust` when the trust records cannot be written or are not hostlink's,
and `add` / `remove` when the configuration cannot be: one line naming the file and the reason, and
what was (not) changed. In-process (click's runner)."""

from __future__ import annotations

import os

from click.testing import CliRunner

from hostlink.cli import cli


def run(tmp_path, *argv):
    environ = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    result = CliRunner().invoke(cli, ["mcp", *argv], env=environ, prog_name="hostlink")
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stderr


def test_trust_where_the_records_cannot_be_written_says_nothing_was_recorded(tmp_path):
    (tmp_path / "project").mkdir()
    (tmp_path / "config").write_text("a file where the configuration directory would be")
    records = tmp_path / "config" / "hostlink" / "trusted-projects.json"
    assert run(tmp_path, "trust", str(tmp_path / "project")) == (
        1, f"hostlink mcp: cannot write {records} (Not a directory); nothing was recorded\n")


def test_untrust_with_records_that_are_not_hostlinks_changes_nothing(tmp_path):
    (tmp_path / "project").mkdir()
    records = tmp_path / "config" / "hostlink" / "trusted-projects.json"
    records.parent.mkdir(parents=True)
    os.symlink(tmp_path / "elsewhere.json", records)
    code, said = run(tmp_path, "untrust", str(tmp_path / "project"))
    assert (code, said) == (1, f"hostlink mcp: {records} is not a trusted-projects file hostlink wrote (a symlink, "
                               "not JSON, or another shape); fix or remove it; nothing was changed\n")
    assert os.path.islink(records) and not (tmp_path / "elsewhere.json").exists()


def test_an_edit_where_the_configuration_cannot_be_written_names_the_file_and_why(tmp_path):
    (tmp_path / "config").write_text("a file where the configuration directory would be")
    target = tmp_path / "config" / "hostlink" / "mcp.json"
    for argv in (["add", "x", "--", "cmd"], ["remove", "x"]):
        assert run(tmp_path, *argv) == (1, f"hostlink mcp: cannot edit {target} (Not a directory)\n")
    assert (tmp_path / "config").read_text() == "a file where the configuration directory would be"
