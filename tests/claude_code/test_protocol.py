"""Stream-json mapping and validation without a process: chunking, strictness, exactness."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hostlink.claude_code import conversation, protocol
from hostlink.host import TextDelta
from hostlink.host.output import strip_controls

EXPECT = conversation.Expectation(tools=("mcp__hostlink__a", "mcp__hostlink__b"), mcp_servers=("hostlink",))
INIT = {
    "type": "system", "subtype": "init", "tools": ["mcp__hostlink__b", "mcp__hostlink__a"],
    "mcp_servers": [{"name": "hostlink", "status": "connected", "source": "dynamic"}], "model": "claude-x",
    "permissionMode": "dontAsk", "slash_commands": [], "skills": [], "plugins": [], "apiKeySource": "none",
}  # fmt: skip


def event(value):
    return {"type": "stream_event", "event": value, "parent_tool_use_id": None}


def feed_all(records):
    mapper = protocol.StreamMapper()
    actions = [action for record in records for action in mapper.feed(record)]
    return mapper, actions


def message(blocks, stop="end_turn"):
    records = [event({"type": "message_start", "message": {"id": "m1", "usage": {"input_tokens": 3}}})]
    for index, (kind, pieces) in enumerate(blocks):
        start = {"type": "tool_use", "id": "t1", "name": "mcp__hostlink__a"} if kind == "tool" else {"type": kind}
        records.append(event({"type": "content_block_start", "index": index, "content_block": start}))
        for piece in pieces:
            delta = {"text": ("text_delta", "text"), "thinking": ("thinking_delta", "thinking"),
                     "tool": ("input_json_delta", "partial_json")}[kind]  # fmt: skip
            records.append(event({"type": "content_block_delta", "index": index,
                                  "delta": {"type": delta[0], delta[1]: piece}}))
        records.append(event({"type": "content_block_stop", "index": index}))
    records.append(event({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 4}}))
    return records


def test_init_matches_regardless_of_order():
    assert conversation.validate_init(INIT, EXPECT) == "claude-x"


@pytest.mark.parametrize(
    "change",
    [
        {"tools": ["mcp__hostlink__a", "mcp__hostlink__b", "mcp__hostlink__b"]},
        {"tools": ["mcp__hostlink__a"]},
        {"tools": "mcp__hostlink__a"},
        {"mcp_servers": []},
        {"mcp_servers": [{"name": "hostlink", "status": "pending"}]},
        {"mcp_servers": [{"name": "hostlink", "status": "connected"}, {"name": "hostlink", "status": "connected"}]},
        {"plugins": None},
        {"model": ""},
    ],
)
def test_init_is_exact(change):
    with pytest.raises(protocol.ProtocolError):
        conversation.validate_init({**INIT, **change}, EXPECT)


def test_test_expectation_accepts_only_the_test_key():
    testing = conversation.Expectation(EXPECT.tools, EXPECT.mcp_servers, testing=True)
    assert conversation.validate_init({**INIT, "apiKeySource": "ANTHROPIC_API_KEY"}, testing)
    with pytest.raises(protocol.ProtocolError):
        conversation.validate_init(INIT, testing)
    with pytest.raises(protocol.ProtocolError):
        conversation.validate_init({**INIT, "apiKeySource": "ANTHROPIC_API_KEY"}, EXPECT)


@given(st.text(max_size=200), st.lists(st.integers(min_value=0, max_value=200), max_size=8))
def test_text_deltas_reassemble_whatever_the_chunking(text, cuts):
    bounds = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    pieces = [text[a:b] for a, b in itertools.pairwise(bounds)]
    mapper, actions = feed_all(message([("text", pieces)]))
    clean = strip_controls(text)
    assert "".join(a.delta for a in actions if isinstance(a, TextDelta)) == clean
    assert mapper.content[0].text == clean and mapper.stop_reason == "end_turn"


def test_claude_text_cannot_carry_terminal_escapes_even_split_across_deltas():
    pieces = ["red \x1b[3", "1mtext\x1b", "]0;window title\x07", " and \x9b2J", "done"]
    mapper, actions = feed_all(message([("text", pieces), ("thinking", ["think \x1b]8;;http://x\x1b\\ing"])]))
    assert [a.delta for a in actions if isinstance(a, TextDelta)] == ["red ", "text", " and ", "done"]
    assert mapper.content[0].text == "red text and done"
    assert mapper.content[1].thinking == "think ing"


@given(
    st.dictionaries(st.text(max_size=10), st.one_of(st.integers(), st.text(max_size=10), st.booleans(), st.none()),
                    max_size=6),
    st.integers(min_value=1, max_value=7),
)
def test_tool_arguments_reassemble_whatever_the_chunking(arguments, size):
    raw = json.dumps(arguments)
    pieces = [raw[i : i + size] for i in range(0, len(raw), size)]
    _, actions = feed_all(message([("tool", pieces)], stop="tool_use"))
    (proposal,) = [a for a in actions if isinstance(a, protocol.Proposal)]
    assert proposal.arguments == arguments and proposal.name == "mcp__hostlink__a"


def test_usage_is_tokens_with_cost_zero():
    mapper, _ = feed_all(message([("text", ["hi"])]))
    assert (mapper.usage.input_tokens, mapper.usage.output_tokens, mapper.usage.cost) == (3, 4, 0.0)


@pytest.mark.parametrize(
    "records",
    [
        [event({"type": "content_block_start", "index": 0, "content_block": {"type": "text"}})],  # before message_start
        [*message([("text", ["a"])])[:2],
         event({"type": "content_block_start", "index": 0, "content_block": {"type": "text"}})],
        [*message([("text", ["a"])])[:2],
         event({"type": "content_block_delta", "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": "{"}})],
        [*message([("text", ["a"])])[:2],
         event({"type": "content_block_start", "index": 1, "content_block": {"type": "server_tool_use"}})],
        [*message([("text", ["a"])])[:2], event({"type": "message_delta", "delta": {"stop_reason": "end_turn"}})],
        [{**message([])[0], "parent_tool_use_id": "toolu_x"}],
    ],
    ids=["before-start", "block-twice", "wrong-delta", "server-tool", "unfinished-block", "sub-agent"],
)  # fmt: skip
def test_malformed_streams_are_protocol_errors(records):
    with pytest.raises(protocol.ProtocolError):
        feed_all(records)


@pytest.mark.parametrize(
    ("record", "code"),
    [
        ({"terminal_reason": "prompt_too_long"}, "context_length_exceeded"),
        ({"result": "Prompt is too long · the request is ~210000 tokens"}, "context_length_exceeded"),
        ({"result": "You've hit your usage limit · resets 5pm"}, "quota_exceeded"),
        ({"api_error_status": 401, "result": "Invalid API key"}, "auth_failed"),
        ({"api_error_status": 529, "api_error_type": "overloaded_error"}, "provider_unavailable"),
        ({"result": "something odd"}, "provider_error"),
    ],
)
def test_error_classification(record, code):
    error = protocol.classify_error({"type": "result", "is_error": True, **record})
    assert error.code == code
    assert "tokens" not in error.message and "resets 5pm" not in error.message


STARTED = message([("text", ["a"])])[:1]
IN_TEXT = message([("text", ["a"])])[:2]
ENDED = message([("text", ["a"])])


@pytest.mark.parametrize(("records", "says"), [
    ([{"type": "system", "subtype": "compact_boundary"}], "claude compacted the conversation, which the host owns"),
    ([INIT], "claude sent a second init record"),
    ([*IN_TEXT, {"type": "system", "subtype": "api_retry"}],
     "stream interrupted: claude retried after content started"),
    ([{"type": "user", "isSynthetic": True}], "stream interrupted: claude resumed a cut-off answer"),
    ([{"type": "stream_event", "parent_tool_use_id": None}], "a stream event has no event"),
    ([*ENDED, event({"type": "content_block_start", "index": 1, "content_block": {"type": "text"}})],
     "stream interrupted: claude continued after the message ended"),
    ([*ENDED, event({"type": "message_stop", "abandoned_blocks": [0]})], "stream interrupted: the answer was cut off"),
    ([event({"type": "message_start", "message": "m1"})], "message_start has no message id"),
    ([*STARTED, *STARTED], "stream interrupted: claude started a second message"),
    ([*IN_TEXT, event({"type": "content_block_stop", "index": 7})], "a content event names an unknown block"),
    ([*STARTED, event({"type": "content_block_start", "index": 0,
                       "content_block": {"type": "tool_use", "id": "t 1; rm", "name": "mcp__hostlink__a"}})],
     "a tool proposal has a malformed id or name"),
    ([*IN_TEXT, event({"type": "content_block_delta", "index": 0, "delta": "text"})],
     "a content delta does not fit its block"),
    ([*IN_TEXT, event({"type": "content_block_stop", "index": 0}), event({"type": "message_delta", "delta": {}})],
     "stream interrupted: the message ended without a stop reason"),
])  # fmt: skip
def test_each_stream_claude_must_not_send_fails_the_request_saying_what_happened(records, says):
    with pytest.raises(protocol.ProtocolError) as failed:
        feed_all(records)
    assert str(failed.value) == says


def test_retries_before_content_are_told_a_bounded_number_of_times():
    _, actions = feed_all([{"type": "system", "subtype": "api_retry"}] * (protocol.MAX_NOTICES + 2))
    assert actions == [protocol.Notice("Claude Code is retrying the request after an API error")] * protocol.MAX_NOTICES


def test_records_that_carry_no_content_change_nothing_and_a_retry_before_content_is_a_notice():
    records = [{"type": "system", "subtype": "api_retry"}, {"type": "user"}, {"type": "system", "subtype": "status"},
               {"type": "tool_progress"},
               *message([("text", ["hi"])])[:1], event({"type": "ping"}),
               event({"type": "content_block_start", "index": 0, "content_block": {"type": "redacted_thinking"}}),
               event({"type": "content_block_stop", "index": 0}),
               event({"type": "content_block_start", "index": 1, "content_block": {"type": "thinking"}}),
               event({"type": "content_block_delta", "index": 1,
                      "delta": {"type": "signature_delta", "signature": "x"}}),
               event({"type": "content_block_stop", "index": 1}),
               event({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": "many"}),
               event({"type": "message_stop"})]
    mapper, actions = feed_all(records)
    assert actions == [protocol.Notice("Claude Code is retrying the request after an API error"),
                       protocol.Stop("end_turn")]
    assert mapper.content == [protocol.ThinkingContent("")]  # redacted thinking is not kept
    assert (mapper.usage.input_tokens, mapper.usage.output_tokens) == (3, 0)  # usage that is not an object: ignored


def test_a_line_that_is_not_a_typed_json_object_is_a_protocol_error():
    for line, says in [(b"not json", "claude wrote a line that is not JSON"),
                       (b'{"kind": "x"}', "claude wrote a record without a type"), (b"[1]", "without a type")]:
        with pytest.raises(protocol.ProtocolError, match=says):
            protocol.parse_record(line)
