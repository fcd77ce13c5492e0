"""The `claude` stream-json protocol: records in, mapped events out.

The handshake up to `system/init` and its validation live in
`hostlink.claude_code.conversation`; this module parses records and maps the ones
after init. Facts for Claude Code 2.1.332 (checked against the real CLI in tests):

- A second `system/init` is a protocol error.
- Content comes only from `stream_event` records (`--include-partial-messages`);
  `assistant` records carry `stop_reason: null` and, for API errors, a synthetic text
  that must never become assistant text.
- A retry after content started (`api_retry`), a second message id or a
  `message_stop` with `abandoned_blocks` (the CLI resumes a cut-off stream on its own)
  means the stream was interrupted.
- Signed in with a subscription the CLI writes a `rate_limit_event` after `message_stop`
  (before the error of a 429): it becomes one `PlanReport`
  (`hostlink.claude_code.plan`). A 429 is reported `rejected` whatever the headers say,
  and its text becomes "You've hit your 5-hour limit · resets …" when the headers name a window
  ("Server is temporarily limiting requests (not your usage limit) · <the API's words>" when
  none). A 400 or 403 gets no report; its text is "API Error: <status> <the API's words>"
  (a 403: "Failed to authenticate. API Error: 403 …"). Signed in by a setup token, the CLI
  sends a request that got a 400 once more, even with `CLAUDE_CODE_MAX_RETRIES=0`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from hostlink.claude_code import plan
from hostlink.host import (
    ErrorEvent,
    TextContent,
    TextDelta,
    ThinkingContent,
    ThinkingDelta,
    Usage,
)
from hostlink.host.output import StreamSanitizer, strip_controls

MAX_NOTICES = 3
MAX_NOTICE_CHARS = 200
_TOOL_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
_OVERFLOW = re.compile(r"prompt is too long|context (length|window)|too many (input )?tokens", re.I)
_USAGE_LIMIT = re.compile(r"usage limit|limit reached|hit your .{0,40}limit", re.I)
# Refusals that concern the plan's settings, not a window that resets: third-party apps drawing
# on extra usage, extra usage off or used up, an organization's or a member's spend cap.
_PLAN_REFUSAL = re.compile(
    r"third[- ]party app|extra usage|overage|spend (limit|cap)|(organization|org)\b.{0,60}\b(limit|cap)\b", re.I)
PLAN_ADVICE = ("check the Claude plan's settings (claude.ai: Settings > Usage — extra usage, "
               "third-party app access, the organization's spend limits)")
# The API's usage-limit error ends in "|<unix time it resets>".
_RESETS_AT = re.compile(r"limit reached\|(\d{9,11})\b")


class ProtocolError(Exception):
    """The child said something the protocol does not allow; the request fails closed.

    `code` is the stable error code the request fails with."""

    def __init__(self, message: str, code: str = "protocol_error") -> None:
        super().__init__(message)
        self.code = code


def parse_record(line: bytes) -> dict[str, Any]:
    """One stdout line as a JSON object with a string `type`."""
    try:
        record = json.loads(line)
    except ValueError:
        raise ProtocolError("claude wrote a line that is not JSON") from None
    if not isinstance(record, dict) or not isinstance(record.get("type"), str):
        raise ProtocolError("claude wrote a record without a type")
    return record


# --- stream mapping -------------------------------------------------------------------


@dataclass(frozen=True)
class Proposal:
    """A complete tool_use block: Claude's tool name and its arguments (a JSON object)."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Stop:
    """`message_delta` gave the stop reason: the message is complete."""

    reason: str


@dataclass(frozen=True)
class Notice:
    message: str


@dataclass(frozen=True)
class PlanReport:
    """A `rate_limit_event`: the plan's usage as the API's last answer reported it."""

    usage: plan.PlanUsage


@dataclass(frozen=True)
class Finished:
    """The `result` record: the turn is over (`error` set when it failed)."""

    error: ErrorEvent | None


Action = TextDelta | ThinkingDelta | Proposal | Stop | Notice | PlanReport | Finished


@dataclass
class _Block:
    kind: str
    parts: list[str] = field(default_factory=list)
    sanitizer: StreamSanitizer = field(default_factory=StreamSanitizer)  # Claude's text is data too
    tool_id: str = ""
    tool_name: str = ""


class StreamMapper:
    """Turns post-init records of one request into actions; raises ProtocolError on misuse.

    It accepts one assistant message: content blocks in order, then its stop reason.
    """

    def __init__(self) -> None:
        self.message_id: str | None = None
        self.content: list[TextContent | ThinkingContent | Proposal] = []
        self.usage = Usage()
        self.stop_reason: str | None = None
        self._blocks: dict[int, _Block] = {}
        self._notices = 0
        self._api_error: ErrorEvent | None = None
        self.plan: plan.PlanUsage | None = None  # the last report of this request

    def feed(self, record: dict[str, Any]) -> list[Action]:
        kind = record["type"]
        if kind == "stream_event":
            return self._event(record)
        if kind == "system":
            return self._system(record)
        if kind == "rate_limit_event":
            usage = plan.parse(record.get("rate_limit_info"))
            if usage is None:
                return []  # a report hostlink cannot read changes nothing
            self.plan = usage
            return [PlanReport(usage)]
        if kind == "assistant":
            self._assistant(record)
            return []
        if kind == "result":
            return [Finished(self._result(record))]
        if kind == "control_request":
            raise ProtocolError("claude asked the host for a permission decision")
        if kind == "user":
            if self.stop_reason is None and record.get("isSynthetic"):
                raise ProtocolError("stream interrupted: claude resumed a cut-off answer")
            return []  # tool results of the CLI's own denials, after the proposal
        return []  # other bookkeeping records never carry content

    def _system(self, record: dict[str, Any]) -> list[Action]:
        subtype = record.get("subtype")
        if subtype == "init":
            raise ProtocolError("claude sent a second init record")
        if subtype == "compact_boundary":
            raise ProtocolError("claude compacted the conversation, which the host owns")
        if subtype == "api_retry":
            if self.message_id is not None:
                raise ProtocolError("stream interrupted: claude retried after content started")
            return self._notice("Claude Code is retrying the request after an API error")
        return []

    def _notice(self, text: str) -> list[Action]:
        if self._notices >= MAX_NOTICES:
            return []
        self._notices += 1
        return [Notice(strip_controls(text)[:MAX_NOTICE_CHARS])]

    def _event(self, record: dict[str, Any]) -> list[Action]:
        if record.get("parent_tool_use_id") is not None:
            raise ProtocolError("claude streamed a sub-agent's output")
        event = record.get("event")
        if not isinstance(event, dict):
            raise ProtocolError("a stream event has no event")
        kind = event.get("type")
        if self.stop_reason is not None and kind not in ("message_stop",):
            raise ProtocolError("stream interrupted: claude continued after the message ended")
        if kind == "message_start":
            return self._message_start(event)
        if self.message_id is None:
            raise ProtocolError("a stream event arrived before message_start")
        if kind == "content_block_start":
            return self._block_start(event)
        if kind == "content_block_delta":
            return self._block_delta(event)
        if kind == "content_block_stop":
            return self._block_stop(event)
        if kind == "message_delta":
            return self._message_delta(event)
        if kind == "message_stop":
            if event.get("abandoned_blocks") is not None or record.get("abandoned_blocks") is not None:
                raise ProtocolError("stream interrupted: the answer was cut off")
            return []
        return []  # ping and future informational events

    def _message_start(self, event: dict[str, Any]) -> list[Action]:
        message = event.get("message")
        if not isinstance(message, dict):
            message = {}
        message_id = message.get("id")
        if not isinstance(message_id, str):
            raise ProtocolError("message_start has no message id")
        if self.message_id is not None:
            raise ProtocolError("stream interrupted: claude started a second message")
        self.message_id = message_id
        self._add_usage(message.get("usage"))
        return []

    def _block(self, event: dict[str, Any]) -> tuple[int, _Block]:
        index = event.get("index")
        if not isinstance(index, int) or index not in self._blocks:
            raise ProtocolError("a content event names an unknown block")
        return index, self._blocks[index]

    def _block_start(self, event: dict[str, Any]) -> list[Action]:
        index, block = event.get("index"), event.get("content_block")
        if not isinstance(index, int) or index in self._blocks or not isinstance(block, dict):
            raise ProtocolError("a content block started twice or without content")
        kind = block.get("type")
        if kind == "tool_use":
            tool_id, name = block.get("id"), block.get("name")
            if not isinstance(tool_id, str) or not _TOOL_ID.fullmatch(tool_id) or not isinstance(name, str):
                raise ProtocolError("a tool proposal has a malformed id or name")
            self._blocks[index] = _Block("tool_use", tool_id=tool_id, tool_name=name)
        elif kind in ("text", "thinking", "redacted_thinking"):
            self._blocks[index] = _Block(kind)
        else:
            raise ProtocolError(f"claude produced an unsupported content block ({str(kind)[:40]})")
        return []

    def _block_delta(self, event: dict[str, Any]) -> list[Action]:
        _, block = self._block(event)
        delta = event.get("delta")
        if not isinstance(delta, dict):
            delta = {}
        kind = delta.get("type")
        if kind == "text_delta" and block.kind == "text" and isinstance(delta.get("text"), str):
            return self._text(block, TextDelta, block.sanitizer.feed(delta["text"]))
        if kind == "thinking_delta" and block.kind == "thinking" and isinstance(delta.get("thinking"), str):
            return self._text(block, ThinkingDelta, block.sanitizer.feed(delta["thinking"]))
        if kind == "input_json_delta" and block.kind == "tool_use" and isinstance(delta.get("partial_json"), str):
            block.parts.append(delta["partial_json"])
            return []
        if kind == "signature_delta" and block.kind == "thinking":
            return []
        raise ProtocolError("a content delta does not fit its block")

    @staticmethod
    def _text(block: _Block, event: type[TextDelta] | type[ThinkingDelta], clean: str) -> list[Action]:
        if not clean:
            return []
        block.parts.append(clean)
        return [event(clean)]

    def _block_stop(self, event: dict[str, Any]) -> list[Action]:
        index, block = self._block(event)
        del self._blocks[index]
        text = "".join(block.parts)  # an escape sequence left unfinished at the block's end is dropped
        if block.kind == "text":
            self.content.append(TextContent(text))
        elif block.kind == "thinking":
            self.content.append(ThinkingContent(text))
        elif block.kind == "tool_use":
            proposal = Proposal(block.tool_id, block.tool_name, _arguments(text))
            self.content.append(proposal)
            return [proposal]
        return []

    def _message_delta(self, event: dict[str, Any]) -> list[Action]:
        delta = event.get("delta")
        reason = delta.get("stop_reason") if isinstance(delta, dict) else None
        if not isinstance(reason, str):  # how claude 2.1.250 ends a message an API error cut off
            raise ProtocolError("stream interrupted: the message ended without a stop reason")
        if self._blocks:
            raise ProtocolError("the message ended with an unfinished content block")
        self._add_usage(event.get("usage"))
        self.stop_reason = reason
        return [Stop(reason)]

    def _add_usage(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return

        def count(name: str, current: int) -> int:
            value = usage.get(name)
            return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else current

        self.usage = Usage(
            input_tokens=count("input_tokens", self.usage.input_tokens),
            output_tokens=count("output_tokens", self.usage.output_tokens),
            cache_read_tokens=count("cache_read_input_tokens", self.usage.cache_read_tokens),
            cache_write_tokens=count("cache_creation_input_tokens", self.usage.cache_write_tokens),
            cost=0.0,  # subscription use is not API billing
        )

    def _assistant(self, record: dict[str, Any]) -> None:
        if record.get("is_api_error_message") or record.get("error"):
            self._api_error = classify_error(record, self.plan)

    def _result(self, record: dict[str, Any]) -> ErrorEvent | None:
        if record.get("is_error") or record.get("subtype") != "success":
            return self._api_error if self._api_error is not None else classify_error(record, self.plan)
        return None


def _arguments(text: str) -> dict[str, Any]:
    """Strict JSON object (no NaN/Infinity, no duplicate keys) from a tool_use input."""

    def no_duplicates(pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, value in pairs:
            if key in result:
                raise ProtocolError("a tool proposal repeats an argument name")
            result[key] = value
        return result

    def no_constants(name: str) -> Any:
        raise ProtocolError("a tool proposal's arguments are not strict JSON")

    try:
        value = json.loads(text or "{}", object_pairs_hook=no_duplicates, parse_constant=no_constants)
    except ValueError:
        raise ProtocolError("a tool proposal's arguments are not valid JSON") from None
    if not isinstance(value, dict):
        raise ProtocolError("a tool proposal's arguments are not a JSON object")
    return value


_REFUSED_REQUEST = {400: "invalid_request", 404: "not_found", 413: "too_large", 422: "invalid_request"}


def classify_error(record: dict[str, Any], usage: plan.PlanUsage | None = None) -> ErrorEvent:
    """A stable error for a failed turn; Claude's own error text is never passed on.

    `usage` (the request's rate-limit report, if any) gives a usage limit its reset time
    when the wording has none."""
    status = record.get("api_error_status")
    kind = str(record.get("api_error_type") or record.get("error") or "")
    texts = [record.get("result"), record.get("terminal_reason")]
    message = record.get("message")
    if isinstance(message, dict) and isinstance(message.get("content"), list):
        texts += [part.get("text") for part in message["content"] if isinstance(part, dict)]
    wording = " ".join(t for t in texts if isinstance(t, str))[:4096]
    if record.get("terminal_reason") == "prompt_too_long" or _OVERFLOW.search(wording):
        return ErrorEvent("the conversation is too long for the model's context window", code="context_length_exceeded")
    if _PLAN_REFUSAL.search(wording):
        shown = f" (HTTP {status})" if isinstance(status, int) else ""
        return ErrorEvent(f"the Claude plan refused the request{shown}: {PLAN_ADVICE}", code="plan_refused")
    if _USAGE_LIMIT.search(wording):
        resets = _RESETS_AT.search(wording)
        resets_at = int(resets.group(1)) if resets else None
        if resets_at is None and usage is not None and usage.status == "rejected":
            resets_at = usage.resets_at
        when = f"at {plan.local_time(resets_at)}" if resets_at is not None else "after it resets"
        window = f" ({plan.window_name(usage.window)} window)" if usage is not None and usage.window else ""
        return ErrorEvent(
            f"the Claude subscription's usage limit is reached{window}; try again {when}",
            code="quota_exceeded",
            retryable=False,
            resets_at=resets_at,
        )
    shown = f" (HTTP {status})" if isinstance(status, int) else ""
    if status == 429 or kind in ("rate_limit", "rate_limit_error"):
        return ErrorEvent(f"Claude is rate limiting requests{shown}", code="rate_limited", retryable=True)
    if (isinstance(status, int) and status >= 500) or kind in ("overloaded_error", "server_error", "api_error"):
        return ErrorEvent(f"the Claude API failed{shown}", code="provider_unavailable", retryable=True)
    if kind in ("authentication_failed", "authentication_error", "oauth_org_not_allowed") or status in (401, 403):
        return ErrorEvent(f"Claude Code is not authorized{shown}; sign in again with `claude`", code="auth_failed")
    if status in _REFUSED_REQUEST:  # the API refused what was asked: the caller's error, not a failure
        return ErrorEvent(f"the Claude API refused the request{shown}", code=_REFUSED_REQUEST[status])
    return ErrorEvent(f"the Claude Code request failed{shown}", code="provider_error")
