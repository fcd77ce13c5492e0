"""Talking to an MCP registry: its v0.1 REST API, read only, on the commands that ask for it.

The registry is the official one unless `HOSTLINK_MCP_REGISTRY` or the `registry` setting of
hostlink's user `mcp.json` names a subregistry (same API). Its URL obeys the configuration's
rule (https, http only on a loopback host); every request goes through the SafeTransport, with
a timeout and a bound on the answer. Errors name the registry and the HTTP status; an answer
is only ever parsed as JSON data, never followed to another URL.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import anyio

from hostlink.host.jsondepth import json_depth_over
from hostlink.mcp.config.load import ConfigError, load_json, read_text, user_config_files
from hostlink.mcp.config.schema import check_url
from hostlink.mcp.errors import McpError

OFFICIAL_REGISTRY = "https://registry.modelcontextprotocol.io"
REGISTRY_VARIABLE = "HOSTLINK_MCP_REGISTRY"
MAX_ANSWER_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 32
REQUEST_SECONDS = 20.0
MAX_PAGES = 20
PAGE_SIZE = 50


class RegistryError(McpError):
    """The registry could not be asked or answered something unusable; the message names the registry."""


@dataclass(frozen=True)
class Registry:
    """Where the registry is and what chose it (for messages)."""

    url: str
    chosen_by: str


def registry_from(environ: Mapping[str, str]) -> Registry:
    """The registry to ask: `HOSTLINK_MCP_REGISTRY`, else the `registry` setting of hostlink's own
    user file (a project's file cannot choose it), else the official registry."""
    if environ.get(REGISTRY_VARIABLE):
        return _checked(environ[REGISTRY_VARIABLE], REGISTRY_VARIABLE)
    path = user_config_files(environ)[1]
    try:
        text = read_text(path)
        document = load_json(text, path) if text is not None else None
    except ConfigError as exc:
        raise RegistryError(f"cannot read the registry setting: {exc}") from None
    setting = document.get("registry") if isinstance(document, dict) else None
    if setting is not None:
        return _checked(setting, f"the registry setting of {path}")
    return Registry(OFFICIAL_REGISTRY, "the default")


def _checked(url: Any, chosen_by: str) -> Registry:
    try:
        if not isinstance(url, str):
            raise ValueError("must be a string")
        check_url(url)
    except ValueError as problem:
        raise RegistryError(f"the registry URL from {chosen_by} is refused: {problem}") from None
    if "?" in url:
        raise RegistryError(f"the registry URL from {chosen_by} is refused: it must not contain a query")
    return Registry(url.rstrip("/"), chosen_by)


async def get_json(registry: Registry, path: str, params: Mapping[str, str] | None = None) -> Any:
    """GET `path` of the registry as a JSON value; 404 answers None."""
    import httpx2

    from hostlink.mcp.transports.http import SafeTransport

    url = f"{registry.url}{path}"
    try:
        with anyio.fail_after(REQUEST_SECONDS):
            async with httpx2.AsyncClient(transport=SafeTransport(MAX_ANSWER_BYTES), timeout=REQUEST_SECONDS,
                                          headers={"Accept": "application/json"}) as http:
                answer = await http.get(url, params=dict(params or {}))
                body = await answer.aread() if answer.status_code == 200 else b""
    except TimeoutError:
        raise RegistryError(f"the registry {registry.url} did not answer within {REQUEST_SECONDS:g} s") from None
    except McpError as refused:  # the SafeTransport refused the URL or the answer: fixed text
        raise RegistryError(f"the registry {registry.url}: {refused}") from None
    except httpx2.HTTPError as error:
        raise RegistryError(f"the registry {registry.url} could not be reached ({type(error).__name__})") from None
    if answer.status_code == 404:
        return None
    if answer.status_code != 200:
        raise RegistryError(f"the registry {registry.url} answered HTTP {answer.status_code}")
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        raise RegistryError(f"the registry {registry.url} answered something that is not JSON") from None
    if json_depth_over(value, MAX_DEPTH):
        raise RegistryError(f"the registry {registry.url} answered JSON nested deeper than {MAX_DEPTH} levels")
    return value


async def search_pages(registry: Registry, text: str, wanted: int) -> list[Any]:
    """The raw records matching `text`, following the cursor until `wanted` are in hand or the
    registry has no more; a cursor seen before (a loop) or more than MAX_PAGES pages is an error."""
    records: list[Any] = []
    seen: set[str] = set()
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        params = {"search": text, "limit": str(PAGE_SIZE), "version": "latest"}
        if cursor is not None:
            params["cursor"] = cursor
        page = await get_json(registry, "/v0.1/servers", params)
        servers = page.get("servers") if isinstance(page, dict) else None
        if not isinstance(servers, list):
            raise RegistryError(f"the registry {registry.url} answered a search without a servers list")
        records += servers
        metadata = page.get("metadata") if isinstance(page, dict) else None
        cursor = metadata.get("nextCursor") if isinstance(metadata, dict) else None
        if not cursor or len(records) >= wanted:
            return records
        if not isinstance(cursor, str) or len(cursor) > 1024:
            raise RegistryError(f"the registry {registry.url} answered an unusable cursor")
        if cursor in seen:
            raise RegistryError(f"the registry {registry.url} answered a cursor it had answered before "
                                "(a loop); the search stopped")
        seen.add(cursor)
    raise RegistryError(f"the registry {registry.url} answered more than {MAX_PAGES} pages; "
                        "the search stopped (narrow it down)")


async def server_record(registry: Registry, name: str, version: str | None) -> Any:
    """The record of server `name` at `version` (None: the latest), or RegistryError naming it."""
    path = f"/v0.1/servers/{quote(name, safe='')}/versions/{quote(version or 'latest', safe='')}"
    record = await get_json(registry, path)
    if record is None:
        shown = f"{name}@{version}" if version else name
        raise RegistryError(f"the registry {registry.url} has no server {shown!r} (HTTP 404)")
    return record

