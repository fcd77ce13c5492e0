"""Talking to a started ``claude`` child, up to its ``system/init``, for the provider and web search.

Facts for Claude Code 2.1.332 (checked against the real CLI in tests):

- With ``--input-format stream-json`` the CLI writes ``system/init`` only after the first
  user message arrives. So a conversation first sends a ``control_request`` ``initialize``
  and validates its answer (auth source, API provider, slash commands, permission mode)
  before any prompt is written; ``init`` then confirms the exact tool inventory before a
  single content record is read. Init listing the catalog's tools also proves the proposal
  server answered ``tools/list``.
- Before init the CLI emits ``system/ui_invalidate`` chatter; anything else before init is
  a protocol error.

One validator serves both children; an :class:`Expectation` says what each must report.
The provider's expects exactly the catalog's ``mcp__<server>__<alias>`` tools on the one
connected proposal server; web search's expects exactly WebSearch and WebFetch and no MCP
server.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hostlink.claude_code.protocol import ProtocolError

SUBSCRIPTION_TOKEN_SOURCE = "claude.ai"
TEST_API_KEY_SOURCE = "ANTHROPIC_API_KEY"
PRE_INIT_SYSTEM_SUBTYPES = frozenset({"ui_invalidate"})


def control_initialize(request_id: str) -> bytes:
    return _line({"type": "control_request", "request_id": request_id, "request": {"subtype": "initialize"}})


def user_message(blocks: Sequence[dict[str, Any]]) -> bytes:
    return _line({"type": "user", "message": {"role": "user", "content": list(blocks)}})


def _line(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


@dataclass(frozen=True)
class Expectation:
    """What a request's child must report: the exact tools and MCP servers, and its auth."""

    tools: tuple[str, ...]
    mcp_servers: tuple[str, ...]
    testing: bool = False

    @property
    def api_key_source(self) -> str:
        return TEST_API_KEY_SOURCE if self.testing else "none"


def validate_control_initialize(record: dict[str, Any], request_id: str, expect: Expectation) -> None:
    """The answer to our ``initialize`` control request: auth and customizations, pre-prompt."""
    response = record.get("response")
    if not isinstance(response, dict) or response.get("request_id") != request_id:
        raise ProtocolError("claude answered a control request hostlink did not send")
    if response.get("subtype") != "success" or not isinstance(response.get("response"), dict):
        raise ProtocolError("claude refused the initialize control request")
    body = response["response"]
    account = body.get("account")
    if not isinstance(account, dict):
        raise ProtocolError("claude did not report its account")
    if account.get("apiProvider") != "firstParty":
        raise ProtocolError("claude is routed to a third-party API provider, not a Claude subscription")
    if account.get("apiKeySource", "none") != expect.api_key_source:
        raise ProtocolError("claude would use an API key, not the Claude subscription")
    token_source = account.get("tokenSource", "none")
    if token_source != ("none" if expect.testing else SUBSCRIPTION_TOKEN_SOURCE):
        raise ProtocolError("claude is not signed in with a Claude subscription (run `claude` and /login)")
    if body.get("commands") != []:
        raise ProtocolError("claude reported slash commands although they are disabled")
    if body.get("current_permission_mode") != "dontAsk":
        raise ProtocolError("claude is not in dontAsk permission mode")


def validate_init(record: dict[str, Any], expect: Expectation) -> str:
    """Check ``system/init`` against the request; returns the model id it reports.

    "Empty" customizations mean exactly ``[]``: with ``--disable-slash-commands`` the CLI
    reports no slash commands and no skills, and with the built-in plugins switched off in
    the request settings it reports no plugins. The built-in ``agents`` list is not
    checked: without an agent tool in the inventory none can run.
    """
    tools = record.get("tools")
    if not isinstance(tools, list) or sorted(tools) != sorted(expect.tools):
        raise ProtocolError("claude's tool inventory is not exactly the request's tools")
    servers = record.get("mcp_servers")
    reported = sorted(_server_status(server) for server in servers) if isinstance(servers, list) else None
    if reported != sorted((name, "connected") for name in expect.mcp_servers):
        raise ProtocolError("claude's MCP servers are not exactly the connected proposal server")
    if record.get("permissionMode") != "dontAsk":
        raise ProtocolError("claude is not in dontAsk permission mode")
    for name in ("slash_commands", "skills", "plugins"):
        if record.get(name) != []:
            raise ProtocolError(f"claude loaded {name.replace('_', ' ')} although customizations are suppressed")
    if record.get("apiKeySource") != expect.api_key_source:
        raise ProtocolError("claude would use an API key, not the Claude subscription")
    model = record.get("model")
    if not isinstance(model, str) or not model:
        raise ProtocolError("claude's init names no model")
    return model


def _server_status(server: Any) -> tuple[Any, Any]:
    return (server.get("name"), server.get("status")) if isinstance(server, dict) else (None, None)
