"""Talking to a started `claude` child, up to its `system/init`, for the provider and web search.

Facts for Claude Code 2.1.332 (checked against the real CLI in tests):

- With `--input-format stream-json` the CLI writes `system/init` only after the first
  user message arrives. So a conversation first sends a `control_request` `initialize`
  and validates its answer (auth source, API provider, slash commands, permission mode)
  before any prompt is written; `init` then confirms the exact tool inventory before a
  single content record is read. Init listing the catalog's tools also proves the proposal
  server answered `tools/list`.
- Before init the CLI emits `system/ui_invalidate` chatter; anything else before init is
  a protocol error.

One validator serves both children; an `Expectation` says what each must report.
The provider's expects exactly the catalog's `mcp__<server>__<alias>` tools on the one
connected proposal server; web search's expects exactly WebSearch and WebFetch and no MCP
server.

A `Conversation` runs that exchange over a started `ClaudeProcess` and then
reads the records that follow, one at a time. With a `CancelSignal` (the
provider's request) each read and write is interruptible by it, through
`hostlink.host.cancel.cancelled_by`, and by an optional deadline: the scope covers
only the one await on the child, never a `yield` of the caller's stream. Without a
signal the caller's own scope bounds the conversation (web search). Failures are
`ConversationError` with a safe message and the provider's error event.

A `DisclosureGuard` holds the child's private directory: nothing Claude says may
name it (the literal path or its resolved form), in a whole answer or in a stream of
pieces where a path may be split between two of them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio

from hostlink.claude_code.process import ClaudeProcess, ProcessError
from hostlink.claude_code.protocol import ProtocolError, parse_record
from hostlink.host import CancelSignal, ErrorEvent
from hostlink.host.cancel import cancelled_by

# The subscription's sign-ins: `claude auth login` (claude.ai) and the long-lived token of
# `claude setup-token` in CLAUDE_CODE_OAUTH_TOKEN (what headless machines use).
SUBSCRIPTION_TOKEN_SOURCES = frozenset({"claude.ai", "CLAUDE_CODE_OAUTH_TOKEN"})
TEST_API_KEY_SOURCE = "ANTHROPIC_API_KEY"
PRE_INIT_SYSTEM_SUBTYPES = frozenset({"ui_invalidate"})
EXITED = "claude exited before it answered"

T = TypeVar("T")


class ConversationError(Exception):
    """The conversation failed; the message is safe to show, `error` is it as an event."""

    def __init__(self, message: str, code: str = "protocol_error", retryable: bool = False) -> None:
        super().__init__(message)
        self.error = ErrorEvent(message, code=code, retryable=retryable)


class ChildGone(ConversationError):
    """The child ended its output or stopped reading its input before init; `when` says
    where, for a caller that reports the exit status."""

    def __init__(self, message: str, when: str) -> None:
        super().__init__(message, code="unexpected_exit")
        self.when = when


class PathDisclosed(ConversationError):
    def __init__(self) -> None:
        super().__init__("claude's output disclosed a private transport path", code="private_path_disclosed")


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
    """The answer to our `initialize` control request: auth and customizations, pre-prompt."""
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
    if (token_source != "none") if expect.testing else (token_source not in SUBSCRIPTION_TOKEN_SOURCES):
        raise ProtocolError("claude is not signed in with a Claude subscription (run `claude auth login`, or on a "
                            "machine without a browser set CLAUDE_CODE_OAUTH_TOKEN from `claude setup-token`)",
                            code="not_signed_in")
    if body.get("commands") != []:
        raise ProtocolError("claude reported slash commands although they are disabled")
    if body.get("current_permission_mode") != "dontAsk":
        raise ProtocolError("claude is not in dontAsk permission mode")


def _inventory_error(reported: Any, expected: Sequence[str]) -> ProtocolError:
    """Only proposal tools missing, their server connected: the CLI dropped tools whose input
    schema it does not accept (a `required` list naming a property twice, for one) — the
    request's fault, said as such and naming them (aliases are safe names); anything else
    fails closed as a protocol error."""
    if isinstance(reported, list) and set(reported) < set(expected):
        missing = sorted(name for name in set(expected) - set(reported) if name.startswith("mcp__"))
        if missing and len(missing) == len(set(expected) - set(reported)):
            names = ", ".join(name.rsplit("__", 1)[-1] for name in missing[:5])
            return ProtocolError(f"claude's tool inventory lacks {names}: the claude CLI did not accept the input "
                                 f"schema of tool {names} (is it a valid JSON Schema?)", code="invalid_request")
    return ProtocolError("claude's tool inventory is not exactly the request's tools")


def validate_init(record: dict[str, Any], expect: Expectation) -> str:
    """Check `system/init` against the request; returns the model id it reports.

    "Empty" customizations mean exactly `[]`: with `--disable-slash-commands` the CLI
    reports no slash commands and no skills, and with the built-in plugins switched off in
    the request settings it reports no plugins. The built-in `agents` list is not
    checked: without an agent tool in the inventory none can run.
    """
    servers = record.get("mcp_servers")
    reported = sorted(_server_status(server) for server in servers) if isinstance(servers, list) else None
    if reported != sorted((name, "connected") for name in expect.mcp_servers):
        raise ProtocolError("claude's MCP servers are not exactly the connected proposal server")
    tools = record.get("tools")
    if not isinstance(tools, list) or sorted(tools) != sorted(expect.tools):
        raise _inventory_error(tools, expect.tools)
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


def checked(check: Callable[..., T], *args: Any) -> T:
    """`check(*args)`, with a `ProtocolError` as a `ConversationError`."""
    try:
        return check(*args)
    except ProtocolError as exc:
        raise ConversationError(str(exc), code=exc.code) from None


def check_cancelled(signal: CancelSignal | None) -> None:
    if signal is not None and signal.cancelled:
        raise ConversationError("the request was cancelled", code="aborted")


class Conversation:
    """The stdin/stdout exchange with one started child (see the module docstring)."""

    def __init__(
        self, process: ClaudeProcess, expect: Expectation, control_id: str, signal: CancelSignal | None = None
    ) -> None:
        self.process = process
        self.expect = expect
        self.control_id = control_id
        self.signal = signal

    async def initialize(self, deadline: float | None = None) -> None:
        """The part of the exchange that needs no prompt: the CLI answers it once started,
        so a prewarmed child does it ahead of its request."""
        await self.send(control_initialize(self.control_id), deadline)
        record = await self._pre_init_record(deadline)
        if record["type"] != "control_response":
            raise ConversationError("claude sent output before it was initialized")
        checked(validate_control_initialize, record, self.control_id, self.expect)

    async def prompt(self, blocks: Sequence[dict[str, Any]], deadline: float | None = None) -> str:
        """Write the prompt `blocks`, close stdin and validate init (after `initialize`)."""
        await self.send(user_message(blocks), deadline)
        await self.process.close_stdin()
        record = await self._pre_init_record(deadline)
        if record["type"] != "system" or record.get("subtype") != "init":
            raise ConversationError("claude sent output before its init record")
        return checked(validate_init, record, self.expect)

    async def send(self, line: bytes, deadline: float | None = None) -> None:
        try:
            await self._interruptible(lambda: self.process.send_line(line), deadline, "read the request")
        except ProcessError as exc:
            raise ChildGone(str(exc), "while reading the request") from None

    async def receive(self, deadline: float | None = None, late: str = "start answering") -> dict[str, Any] | None:
        """The next stdout record (None at end of output)."""
        line = await self._interruptible(self.process.receive_line, deadline, late)
        return None if line is None else checked(parse_record, line)

    async def _pre_init_record(self, deadline: float | None) -> dict[str, Any]:
        while True:
            record = await self.receive(deadline)
            if record is None:
                raise ChildGone(EXITED, "before it was initialized")
            if record["type"] == "system" and record.get("subtype") in PRE_INIT_SYSTEM_SUBTYPES:
                continue
            return record

    async def _interruptible(self, operation: Callable[[], Awaitable[T]], deadline: float | None, late: str) -> T:
        """Await `operation()` so that the signal (or the deadline) interrupts it."""
        check_cancelled(self.signal)
        with cancelled_by(self.signal) if self.signal is not None else anyio.CancelScope() as scope:
            if deadline is not None:
                scope.deadline = deadline
            return await operation()
        check_cancelled(self.signal)
        raise ConversationError(f"claude did not {late} in time", code="timeout", retryable=True)


class DisclosureGuard:
    """Refuses output that names the private `directory` (see the module docstring)."""

    def __init__(self, directory: Path) -> None:
        self._paths = (str(directory), os.path.realpath(directory))
        self._keep = max(len(path) for path in self._paths)
        self._tail = ""  # the end of the pieces seen so far, to find a path split across them

    def discloses(self, text: str) -> bool:
        return any(path in text for path in self._paths)

    def check(self, text: str) -> None:
        """Raise `PathDisclosed` if `text` names the directory."""
        if self.discloses(text):
            raise PathDisclosed()

    def check_piece(self, text: str) -> None:
        """Like `check` for the next piece of a stream, counting the pieces before it."""
        window = self._tail + text
        self._tail = window[-self._keep :]
        self.check(window)
