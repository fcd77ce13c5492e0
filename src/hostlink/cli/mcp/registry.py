"""`hostlink mcp search` and `hostlink mcp add NAME --from-registry SERVER[@VERSION]`.

Both ask the MCP registry (official unless HOSTLINK_MCP_REGISTRY or the `registry` setting names
another) and nothing else does. An added entry goes through the same checks, scopes and
atomic write as `hostlink mcp add`, and records where it came from (`fromRegistry`), so that a
later add of the same server from the same registry updates it.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

import click

from hostlink.cli.session import Fail, command_path

MAX_SEARCH_CHARS = 200


@click.command(name="search")
@click.argument("text")
@click.option("--json", "as_json", is_flag=True, help='{"registry", "servers": [...]} on stdout.')
@click.option("--all", "all_statuses", is_flag=True,
              help="Also the servers the registry no longer lists as active (deprecated, deleted), marked so.")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 100), help="Show at most this many.")
def search_command(text: str, as_json: bool, all_statuses: bool, limit: int) -> None:
    """Find servers in the MCP registry: name, version, how each runs, title and description."""
    import anyio

    from hostlink.host.output import compact_json
    from hostlink.mcp import RegistryError, listing_line, listings, registry_from, search_pages

    if not text.strip() or len(text) > MAX_SEARCH_CHARS:
        raise Fail(f"the search text must have 1 to {MAX_SEARCH_CHARS} characters", "usage")
    try:
        registry = registry_from(os.environ)
        found = listings(anyio.run(search_pages, registry, text, limit), all_statuses, limit)
    except RegistryError as exc:
        raise Fail(str(exc), "request_failed") from None
    if as_json:
        click.echo(compact_json({"registry": registry.url, "servers": [listing.as_json() for listing in found]}))
        return
    if not found:
        click.echo(f"no server in {registry.url} matches {text!r}")
        return
    click.echo("\n".join(listing_line(listing) for listing in found))
    click.echo(f"{command_path()} add NAME --from-registry SERVER adds one", err=True)


def inputs_of(values: tuple[str, ...]) -> dict[str, list[str]]:
    """`--input KEY=VALUE`s by key; a key given more than once is a repeated input."""
    inputs: dict[str, list[str]] = {}
    for value in values:
        key, found, rest = value.partition("=")
        if not found or not key.strip():
            raise Fail("--input must be given as KEY=VALUE", "usage")
        inputs.setdefault(key.strip(), []).append(rest)
    return inputs


@dataclass(frozen=True)
class FromRegistry:
    """An entry built from the registry, what to say after the name when it is written, and the
    lines that follow (the command it runs, the secrets to set)."""

    entry: dict[str, Any]
    about: str
    notes: list[str]


def entry_from_registry(name: str, wanted: str, package: str | None, inputs: dict[str, list[str]]) -> FromRegistry:
    """NAME's entry built from the registry's server.json of `wanted` (SERVER or SERVER@VERSION),
    with its provenance; a failure says nothing was written."""
    import anyio

    from hostlink.host.output import one_line
    from hostlink.host.platform.shell import set_variable_line, word
    from hostlink.mcp import InputError, RegistryError, build_entry, registry_from, server_record

    server_name, _, version = wanted.partition("@")
    if not server_name or len(wanted) > 300 or not wanted.isprintable() or any(c.isspace() for c in wanted):
        raise Fail("--from-registry must be SERVER or SERVER@VERSION, as `search` lists it", "usage")
    try:
        registry = registry_from(os.environ)
        record = anyio.run(server_record, registry, server_name, version or None)
        server, found_version = _server_of(record, server_name, registry.url)
        built = build_entry(name, server, package, inputs, _ask if sys.stdin.isatty() else None, os.environ)
    except InputError as exc:
        raise Fail(f"{exc}; nothing was written", "usage") from None
    except RegistryError as exc:
        raise Fail(f"{exc}; nothing was written", "request_failed") from None
    entry = {**built.entry, "fromRegistry": {"registry": registry.url, "name": server_name, "version": found_version}}
    runs = entry["url"] if "url" in entry else " ".join(word(part) for part in [entry["command"], *entry["args"]])
    notes = [f"it runs: {one_line(runs, 500)}"] + [
        f"a secret input: set it where the server starts, never in a file: {set_variable_line(variable, '…')}"
        for variable in built.secrets]
    return FromRegistry(entry, f" ({server_name} {found_version}, {built.kind})", notes)


def same_source(existing: Any, entry: dict[str, Any]) -> bool:
    """Whether `existing` was added from the same registry and server as `entry` (so it may be updated)."""
    source = existing.get("fromRegistry") if isinstance(existing, dict) else None
    return isinstance(source, dict) and {key: source.get(key) for key in ("registry", "name")} == {
        key: entry["fromRegistry"][key] for key in ("registry", "name")}


def _server_of(record: Any, name: str, registry: str) -> tuple[dict[str, Any], str]:
    from hostlink.mcp import RegistryError

    server = record.get("server") if isinstance(record, dict) else None
    if not isinstance(server, dict) or server.get("name") != name:
        raise RegistryError(f"the registry {registry} answered a record that is not the server {name!r}")
    version = server.get("version")
    if not isinstance(version, str) or not 0 < len(version) <= 64 or not version.isprintable():
        raise RegistryError(f"the registry {registry} answered a record without a usable version")
    return server, version


def _ask(key: str, description: str, choices: tuple[str, ...]) -> str | None:
    """A required input, asked at the terminal."""
    hint = f" ({description})" if description else ""
    options = f" [{'/'.join(choices)}]" if choices else ""
    answer = click.prompt(f"{key}{hint}{options}", default="", show_default=False, err=True)
    return str(answer) or None
