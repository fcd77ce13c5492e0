"""Project trust records at their edges: an MCP file that cannot be read makes the project no
longer match its record (and trusted again, it matches), and the records never grow past 1 MiB."""

from __future__ import annotations

import pytest

from hostlink.host import trust as trust_module
from hostlink.host.trust import TrustRecordsError, project_digest, read_records, trust


def test_an_unreadable_mcp_file_no_longer_matches_its_record(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / ".mcp.json").write_text('{"mcpServers": {}}')
    readable = project_digest(project)
    (project / ".mcp.json").unlink()
    absent = project_digest(project)
    (project / ".mcp.json").mkdir()  # there, but not readable as a file
    unreadable = project_digest(project)
    assert len({readable, absent, unreadable}) == 3
    assert project_digest(project) == unreadable


def test_records_that_would_grow_past_the_bound_are_refused_and_kept_as_they_were(tmp_path, monkeypatch):
    environ = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "HOME": str(tmp_path)}
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    trust(tmp_path / "a", environ)
    monkeypatch.setattr(trust_module, "MAX_RECORDS_BYTES", 300)
    with pytest.raises(TrustRecordsError, match=r"trusted-projects\.json would grow beyond 1 MiB; untrust projects "
                                                 r"you no longer use$"):
        trust(tmp_path / "b", environ)
    assert list(read_records(environ)) == [str((tmp_path / "a").resolve())]
