"""Project trust, decided by hosts: a flag, `HOSTLINK_TRUST_PROJECT`, or a lasting record.

A project's MCP files can start programs, so a host reads them only when the person trusts
the project. `hostlink mcp trust` records the project's real path with a digest of its MCP
files in `$XDG_CONFIG_HOME/hostlink/trusted-projects.json`; the record counts only while
those files are what was trusted: an edit, a new file or a removed one makes the project
untrusted again, reported as "changed since trusted". The project is the nearest directory
from the working directory up that holds one of its MCP files, never above the repository
root (the nearest directory with `.git`). Extensions are told the decision, never make it.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from hostlink.host.platform import folders
from hostlink.host.private import read_private_json, replace_private_file

PROJECT_FILES = (".mcp.json", ".hostlink/mcp.json")  # in the order they are read
TRUST_PROJECT_VARIABLE = "HOSTLINK_TRUST_PROJECT"
MAX_FILE_BYTES = 1024 * 1024  # of a project file read for its digest (a load refuses larger ones)
MAX_RECORDS_BYTES = 1024 * 1024
RECORDS = "trusted-projects.json"
_TRUE = ("1", "true", "yes", "on")

How = Literal["flag", "environment", "record", "changed", "unreadable", "none"]


class TrustRecordsError(RuntimeError):
    """The trust records file is not one hostlink wrote; nothing is read from or written to it."""


def trust_from_environment(environ: Mapping[str, str]) -> bool:
    """Whether `HOSTLINK_TRUST_PROJECT` says to trust the project: one reading for every host."""
    return environ.get(TRUST_PROJECT_VARIABLE, "").strip().lower() in _TRUE


def config_home(environ: Mapping[str, str]) -> Path:
    """`$XDG_CONFIG_HOME` (a relative value is ignored, as the XDG spec says: ~/.config);
    `%APPDATA%` on Windows (`hostlink.host.platform.folders`)."""
    return folders.config_home(environ)


def records_file(environ: Mapping[str, str]) -> Path:
    return config_home(environ) / "hostlink" / RECORDS


def find_project(cwd: Path) -> Path:
    """The project directory of `cwd`: the nearest one up holding an MCP file, searched
    up to the repository root (or the filesystem root); `cwd` itself when none has one."""
    here = Path(os.path.abspath(cwd))
    for directory in (here, *here.parents):
        if any(os.path.lexists(directory / name) for name in PROJECT_FILES):
            return directory
        if os.path.lexists(directory / ".git"):
            break
    return here


def project_digest(project: Path) -> str:
    """A digest of the project's MCP files as they are now (a missing file counts too)."""
    digest = hashlib.sha256()
    for name in PROJECT_FILES:
        try:
            with open(project / name, "rb") as file:
                data = b"present " + hashlib.sha256(file.read(MAX_FILE_BYTES + 1)).digest()
        except FileNotFoundError:
            data = b"absent"
        except OSError:  # unreadable: a load fails on it, and readable again it no longer matches
            data = b"unreadable"
        digest.update(name.encode() + b"\0" + data + b"\0")
    return digest.hexdigest()


@dataclass(frozen=True)
class ProjectTrust:
    """A host's decision for one project, and how it was reached."""

    trusted: bool
    project: Path
    how: How

    @property
    def note(self) -> str | None:
        """Why a recorded trust was withheld, for a person who can fix it."""
        if self.how == "changed":
            return "changed since trusted (its MCP files differ from the ones trusted)"
        if self.how == "unreadable":
            return "the trusted-projects records cannot be read"
        return None

    @property
    def warning(self) -> str | None:
        """The note as a sentence a host can show on its own."""
        if self.note is None:
            return None
        shown = str(self.project) if str(self.project).isprintable() else ascii(str(self.project))
        return f"the project {shown} is untrusted: {self.note}; its MCP servers are ignored until it is trusted again"


def project_trust(cwd: Path, environ: Mapping[str, str], *, flag: bool = False) -> ProjectTrust:
    """The trust a host gives the project of `cwd`: a flag or the environment say yes;
    otherwise a record whose digest still matches the project's MCP files."""
    project = find_project(cwd)
    if flag:
        return ProjectTrust(True, project, "flag")
    if trust_from_environment(environ):
        return ProjectTrust(True, project, "environment")
    try:
        record = read_records(environ).get(os.path.realpath(project))
    except TrustRecordsError:
        return ProjectTrust(False, project, "unreadable")
    if record is None:
        return ProjectTrust(False, project, "none")
    if record.get("digest") != project_digest(project):
        return ProjectTrust(False, project, "changed")
    return ProjectTrust(True, project, "record")


def read_records(environ: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """The records by real path; TrustRecordsError when the file exists but is not ours."""
    path = records_file(environ)
    if not os.path.lexists(path):
        return {}
    document = read_private_json(path, MAX_RECORDS_BYTES)
    projects = document.get("projects") if isinstance(document, dict) and document.get("version") == 1 else None
    if not isinstance(projects, dict) or not all(isinstance(v, dict) for v in projects.values()):
        raise TrustRecordsError(f"{path} is not a trusted-projects file hostlink wrote (a symlink, not JSON, "
                                "or another shape); fix or remove it")
    return projects


def trust(project: Path, environ: Mapping[str, str]) -> str:
    """Record `project` as trusted with its MCP files as they are now; the digest."""
    records = read_records(environ)
    digest = project_digest(project)
    records[os.path.realpath(project)] = {"digest": digest, "trusted": time.time()}
    _write(records, environ)
    return digest


def untrust(project: Path, environ: Mapping[str, str]) -> bool:
    """Remove the record of `project`; False when there was none."""
    records = read_records(environ)
    if records.pop(os.path.realpath(project), None) is None:
        return False
    _write(records, environ)
    return True


def _write(records: dict[str, dict[str, Any]], environ: Mapping[str, str]) -> None:
    import json

    path = records_file(environ)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    data = json.dumps({"version": 1, "projects": records}, indent=2, sort_keys=True)
    if len(data.encode()) > MAX_RECORDS_BYTES:
        raise TrustRecordsError(f"{path} would grow beyond 1 MiB; untrust projects you no longer use")
    replace_private_file(path.parent, path.name, data)
