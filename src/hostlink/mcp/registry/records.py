"""What a registry answers, as data: one listing per server, its text sanitized and bounded.

A record is `{"server": <server.json>, "_meta": {"io.modelcontextprotocol.registry/official":
{"status", "isLatest", …}}}`. Nothing in it is trusted: each shown string is one line without
escapes, cut to its bound; a record without a usable name is left out rather than guessed at.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from hostlink.host.output import one_line

OFFICIAL_META = "io.modelcontextprotocol.registry/official"
KINDS = {"npm": "npm", "pypi": "pypi", "oci": "oci", "nuget": "nuget", "mcpb": "mcpb"}
MAX_NAME = 200
MAX_TITLE = 100
MAX_DESCRIPTION = 300
MAX_VERSION = 64


@dataclass(frozen=True)
class Listing:
    """One server as `hostlink mcp search` shows it: `runs` says how it can run (package
    kinds, and `remote` for a Streamable HTTP endpoint)."""

    name: str
    title: str
    description: str
    version: str
    status: str
    runs: tuple[str, ...]

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "runs": list(self.runs)}


def status_of(record: dict[str, Any]) -> str:
    """The registry's status of a record (`active` when it says none)."""
    meta = record.get("_meta")
    official = meta.get(OFFICIAL_META) if isinstance(meta, dict) else None
    status = official.get("status") if isinstance(official, dict) else None
    return one_line(status, 20) if isinstance(status, str) and status else "active"


def listing_of(record: Any) -> Listing | None:
    """The record as a listing; None when it has no server or no name."""
    server = record.get("server") if isinstance(record, dict) else None
    if not isinstance(server, dict) or not isinstance(server.get("name"), str) or not server["name"].strip():
        return None
    return Listing(name=one_line(server["name"], MAX_NAME), title=_text(server.get("title"), MAX_TITLE),
                   description=_text(server.get("description"), MAX_DESCRIPTION),
                   version=_text(server.get("version"), MAX_VERSION), status=status_of(record), runs=runs_of(server))


def runs_of(server: dict[str, Any]) -> tuple[str, ...]:
    """The ways a server can run, in the order its record lists them, each once."""
    runs: list[str] = []
    for package in items(server, "packages"):
        kind = package.get("registryType") if isinstance(package, dict) else None
        if isinstance(kind, str) and kind.lower() in KINDS:
            runs.append(KINDS[kind.lower()])
    for remote in items(server, "remotes"):
        kind = remote.get("type") if isinstance(remote, dict) else None
        if kind == "streamable-http":
            runs.append("remote")
        elif kind == "sse":
            runs.append("remote (sse)")
    return tuple(dict.fromkeys(runs))


def items(server: dict[str, Any], key: str) -> list[Any]:
    value = server.get(key)
    return value if isinstance(value, list) else []


def _text(value: Any, limit: int) -> str:
    return one_line(value, limit) if isinstance(value, str) else ""


def listings(records: list[Any], all_statuses: bool, limit: int) -> list[Listing]:
    """The usable listings, each server once (the first record wins), the non-active ones only
    when asked for, at most `limit`."""
    found: dict[str, Listing] = {}
    for record in records:
        listing = listing_of(record)
        if listing is None or listing.name in found or (listing.status != "active" and not all_statuses):
            continue
        found[listing.name] = listing
    return list(found.values())[:limit]


def listing_line(listing: Listing) -> str:
    """Two lines for a person: name, version, how it runs, a mark when not active; then title and description."""
    mark = "" if listing.status == "active" else f" [{listing.status}]"
    head = f"{listing.name} {listing.version or '(no version)'}{mark}  ({', '.join(listing.runs) or 'no way to run'})"
    about = " — ".join(part for part in (listing.title, listing.description) if part)
    return f"{head}\n  {about}" if about else head
