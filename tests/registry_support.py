"""A fixture MCP registry on 127.0.0.1: the v0.1 API (`/v0.1/servers` with search, limit and
cursor; `/v0.1/servers/{name}/versions/{version|latest}`) over records shaped like the official
registry's, and a way to make any path answer something hostile instead."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

OFFICIAL = "io.modelcontextprotocol.registry/official"


def record(server: dict[str, Any], status: str = "active") -> dict[str, Any]:
    return {"server": {"$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
                       **server},
            "_meta": {OFFICIAL: {"status": status, "publishedAt": "2026-08-31T10:00:00Z",
                                 "updatedAt": "2026-08-31T10:00:00Z", "isLatest": True}}}


MEMORY = record({
    "name": "io.github.modelcontextprotocol/server-memory", "title": "Memory",
    "description": "Knowledge graph-based persistent memory system", "version": "2026.8.31",
    "repository": {"url": "https://github.com/modelcontextprotocol/servers", "source": "github",
                   "subfolder": "src/memory"},
    "packages": [{"registryType": "npm", "registryBaseUrl": "https://registry.npmjs.org",
                  "identifier": "@modelcontextprotocol/server-memory", "version": "2026.8.31",
                  "transport": {"type": "stdio"},
                  "environmentVariables": [{"name": "MEMORY_FILE_PATH", "format": "filepath",
                                            "description": "Where the knowledge graph is stored"}]}]})
TIME = record({
    "name": "io.github.modelcontextprotocol/server-time", "title": "Time",
    "description": "Time and timezone conversion", "version": "2026.10.19",
    "packages": [{"registryType": "pypi", "registryBaseUrl": "https://pypi.org", "identifier": "mcp-server-time",
                  "version": "2026.10.19", "runtimeHint": "uvx", "transport": {"type": "stdio"},
                  "packageArguments": [{"type": "named", "name": "--local-timezone", "valueHint": "timezone",
                                        "default": "UTC", "description": "IANA timezone"}]}]})
DATABASE = record({  # an OCI image with a repeated runtime argument whose value has a {variable}
    "name": "io.example/db", "description": "A database server in a container", "version": "1.4.0",
    "packages": [{"registryType": "oci", "identifier": "ghcr.io/example/db-mcp:1.4.0",
                  "transport": {"type": "stdio"},
                  "runtimeArguments": [{"type": "named", "name": "-e", "value": "DB_TYPE={db_type}",
                                        "variables": {"db_type": {"choices": ["postgres", "mysql"],
                                                                  "isRequired": True}}},
                                       {"type": "named", "name": "--network", "value": "host"}],
                  "environmentVariables": [{"name": "DB_URL", "isRequired": True}]},
                 {"registryType": "npm", "identifier": "@example/db-mcp", "version": "1.4.0",
                  "transport": {"type": "stdio"}}]})
BUNDLE = record({
    "name": "io.example/bundle", "description": "An MCPB bundle", "version": "0.3.0",
    "packages": [{"registryType": "mcpb", "identifier": "https://example.com/releases/bundle-0.3.0.mcpb",
                  "version": "0.3.0", "fileSha256": "fe333e598595000ae021bd27117db32ec69af6987f507ba7a63c90638ff633ce",
                  "transport": {"type": "stdio"}}]})
REMOTE = record({
    "name": "io.example/remote", "title": "Remote", "description": "A hosted server per tenant", "version": "2.0.0",
    "remotes": [{"type": "sse", "url": "https://sse.example.com/sse"},
                {"type": "streamable-http", "url": "https://{tenant}.mcp.example.com/mcp",
                 "variables": {"tenant": {"description": "Your tenant", "isRequired": True}},
                 "headers": [{"name": "Authorization", "value": "Bearer {token}",
                              "variables": {"token": {"isSecret": True, "isRequired": True}}},
                             {"name": "X-Region", "choices": ["eu", "us"], "default": "eu"},
                             {"name": "X-Api-Key", "isSecret": True}]}]})
OLD = record({"name": "io.example/old-memory", "description": "Superseded memory server", "version": "0.1.0",
              "packages": [{"registryType": "npm", "identifier": "old-memory", "version": "0.1.0",
                            "transport": {"type": "stdio"}}]}, status="deprecated")
EVERY_INPUT = record({
    "name": "io.example/every-input", "description": "Inputs of every kind", "version": "3.0.0",
    "packages": [{"registryType": "npm", "identifier": "every-input", "version": "3.0.0",
                  "transport": {"type": "stdio"},
                  "runtimeArguments": [{"type": "named", "name": "--node-options",
                                        "value": "--max-old-space-size=512"}],
                  "packageArguments": [
                      {"type": "positional", "valueHint": "root", "isRequired": True, "format": "filepath"},
                      {"type": "positional", "valueHint": "extra", "isRepeated": True},
                      {"type": "named", "name": "--mode", "choices": ["fast", "safe"], "default": "fast"},
                      {"type": "named", "name": "--verbose"},
                      {"type": "named", "name": "--port", "format": "number", "isRequired": True},
                      {"type": "named", "name": "--token", "isSecret": True, "isRequired": True}],
                  "environmentVariables": [
                      {"name": "API_KEY", "isSecret": True, "isRequired": True},
                      {"name": "DEBUG", "format": "boolean", "default": "false"},
                      {"name": "LOG_LEVEL", "choices": ["debug", "info"], "isRequired": True}]}]})
RECORDS = [MEMORY, TIME, DATABASE, BUNDLE, REMOTE, OLD, EVERY_INPUT]


class Registry(http.server.ThreadingHTTPServer):
    """The records, and `answers`: path (with query) -> (status, body) that replaces the normal answer."""

    records: list[dict[str, Any]]
    answers: dict[str, tuple[int, bytes]]
    paths: list[str]
    delay: float  # seconds before each answer

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(http.server.BaseHTTPRequestHandler):
    server: Registry

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.server.paths.append(self.path)
        time.sleep(self.server.delay)
        for prefix, (status, body) in self.server.answers.items():
            if self.path.startswith(prefix):
                return self._send(status, body)
        parts = urlsplit(self.path)
        query = {key: values[0] for key, values in parse_qs(parts.query).items()}
        if parts.path == "/v0.1/servers":
            matching = [r for r in self.server.records
                        if query.get("search", "").lower() in r["server"]["name"].lower()]
            start, limit = int(query.get("cursor", "0")), int(query.get("limit", "30"))
            page = matching[start:start + limit]
            metadata: dict[str, Any] = {"count": len(page)}
            if start + limit < len(matching):
                metadata["nextCursor"] = str(start + limit)
            return self._send(200, json.dumps({"servers": page, "metadata": metadata}).encode())
        head, _, version = parts.path.rpartition("/versions/")
        name = unquote(head.removeprefix("/v0.1/servers/"))
        for found in self.server.records:
            if found["server"]["name"] == name and version in ("latest", found["server"]["version"]):
                return self._send(200, json.dumps(found).encode())
        return self._send(404, b'{"title": "Not Found", "status": 404, "detail": "Server not found"}')

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # hostlink stopped reading: an answer over its bound, or one it gave up waiting for


@contextmanager
def fixture_registry(records: list[dict[str, Any]] | None = None) -> Iterator[Registry]:
    registry = Registry(("127.0.0.1", 0), _Handler)
    registry.records, registry.answers, registry.paths, registry.delay = list(records or RECORDS), {}, [], 0.0
    serving = threading.Thread(target=registry.serve_forever, daemon=True)
    serving.start()
    try:
        yield registry
    finally:
        registry.shutdown()
        registry.server_close()
        serving.join(5)
