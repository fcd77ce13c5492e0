"""The Claude transcript: append stability, @ escaping, pairing, images, limits, linearity."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hostlink.claude_code import transcript as transcript_module
from hostlink.claude_code.catalog import build_catalog
from hostlink.claude_code.transcript import (
    MAX_IMAGES,
    MAX_TRANSCRIPT_BYTES,
    PROTOCOL,
    TranscriptError,
    attachment_block,
    serialize,
)
from hostlink.host import (
    AssistantMessage,
    Context,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolDefinition,
    ToolResultMessage,
    Usage,
    UserMessage,
)

TOOLS = [
    ToolDefinition("read", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}}),
    ToolDefinition("run.shell", "Run a command", {"type": "object"}),
]
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 16
GIF = b"GIF89a" + b"\x00" * 16
WEBP = b"RIFF\x10\x00\x00\x00WEBPVP8 " + b"\x00" * 8


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def run(messages, tools=TOOLS, system="system"):
    return serialize(Context(system, messages, tools), build_catalog(tools, messages))


def records(messages, **kwargs):
    return [json.loads(r) for r in run(messages, **kwargs).records]


def test_header_then_one_record_per_message():
    result = run([UserMessage([TextContent("hi")]), AssistantMessage([TextContent("hello")])])
    assert result.system_prompt == "system"
    header = json.loads(result.records[0])
    assert header["type"] == "transcript" and header["protocol"] == PROTOCOL
    assert header["instruction"]
    assert header["tools"] == {"read": "mcp__hostlink__read", "run.shell": result_alias("run.shell")}
    assert [json.loads(r)["type"] for r in result.records[1:]] == ["user", "assistant"]


def result_alias(name):
    return "mcp__hostlink__" + build_catalog(TOOLS, []).alias_for(name)


def test_content_kinds_are_kept_and_metadata_dropped():
    messages = [
        UserMessage([TextContent("question")]),
        AssistantMessage(
            [ThinkingContent("pondering"), TextContent("answer"), ToolCall("c1", "read", {"path": "x"})],
            stop_reason="toolUse",
            usage=Usage(input_tokens=123456, output_tokens=654321, cost=9.5),
            model="claude-secret-model-id",
        ),
        ToolResultMessage("c1", "read", [TextContent("contents")], is_error=True),
    ]
    result = run(messages)
    _, user, assistant, tool_result = (json.loads(r) for r in result.records)
    assert user == {"type": "user", "content": [{"type": "text", "text": "question"}]}
    assert assistant == {
        "type": "assistant",
        "content": [
            {"type": "thinking", "thinking": "pondering"},
            {"type": "text", "text": "answer"},
            {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "x"}},
        ],
    }
    assert tool_result == {
        "type": "toolResult",
        "toolCallId": "c1",
        "name": "read",
        "isError": True,
        "content": [{"type": "text", "text": "contents"}],
    }
    joined = "".join(result.records)
    for leaked in ("123456", "654321", "9.5", "claude-secret-model-id", "toolUse"):
        assert leaked not in joined


def test_every_at_sign_is_json_escaped():
    messages = [
        UserMessage([TextContent("read @/etc/passwd and @\"~/.ssh/id_rsa\"")]),
        AssistantMessage([ToolCall("id@1", "read", {"path": "@x", "@key": ["@"]})]),
        ToolResultMessage("id@1", "read", [TextContent("user@example.com")]),
    ]
    result = run(messages)
    for record in result.records:
        assert "@" not in record
        assert "\\u0040" in record or json.loads(record)["type"] == "transcript"
    decoded = [json.loads(r) for r in result.records]
    assert decoded[1]["content"][0]["text"] == "read @/etc/passwd and @\"~/.ssh/id_rsa\""
    assert decoded[2]["content"][0]["arguments"] == {"path": "@x", "@key": ["@"]}


def test_tool_results_pair_by_call_id():
    messages = [
        AssistantMessage([ToolCall("a", "read", {}), ToolCall("b", "run.shell", {})]),
        # Answered out of order, and with a misleading tool name: the call decides.
        ToolResultMessage("b", "read", [TextContent("B")]),
        ToolResultMessage("a", "read", [TextContent("A")]),
    ]
    _, _, first, second = records(messages)
    assert first["toolCallId"] == "b" and first["name"] == "run.shell" and "unmatched" not in first
    assert second["toolCallId"] == "a" and second["name"] == "read" and "unmatched" not in second


def test_orphan_and_duplicate_results_are_kept_and_marked_unmatched():
    messages = [
        ToolResultMessage("nobody", "read", [TextContent("orphan")]),
        AssistantMessage([ToolCall("a", "read", {})]),
        ToolResultMessage("a", "read", [TextContent("first")]),
        ToolResultMessage("a", "read", [TextContent("again")]),
    ]
    _, orphan, _, first, again = records(messages)
    assert orphan["unmatched"] is True and orphan["name"] == "read"
    assert orphan["content"] == [{"type": "text", "text": "orphan"}]
    assert "unmatched" not in first
    assert again["unmatched"] is True


def test_dangling_call_stays_as_proposed():
    messages = [AssistantMessage([ToolCall("a", "read", {})]), UserMessage([TextContent("never mind")])]
    _, call, user = records(messages)
    assert call["content"] == [{"type": "toolCall", "id": "a", "name": "read", "arguments": {}}]
    assert user["type"] == "user"


def test_removed_tools_are_named_by_their_labels():
    messages = [
        AssistantMessage([ToolCall("a", "old", {}), ToolCall("b", "old.dotted", {})]),
        ToolResultMessage("a", "old", [TextContent("x")]),
        ToolResultMessage("zz", "older", []),
    ]
    _, calls, result, orphan = records(messages)
    assert [c["name"] for c in calls["content"]] == ["removed:old", calls["content"][1]["name"]]
    assert calls["content"][1]["name"].startswith("removed:#")
    assert result["name"] == "removed:old"
    assert orphan["name"] == "removed:older"


@pytest.mark.parametrize(
    ("data", "mime", "extension"),
    [(PNG, "image/png", "png"), (JPEG, "image/jpeg", "jpg"), (GIF, "image/gif", "gif"), (WEBP, "image/webp", "webp")],
)
def test_valid_images_become_content_addressed_attachments(data, mime, extension):
    messages = [
        UserMessage([ImageContent(b64(data), mime), TextContent("look")]),
        AssistantMessage([ToolCall("a", "read", {})]),
        ToolResultMessage("a", "read", [ImageContent(b64(data), mime)]),
    ]
    result = run(messages)
    (attachment,) = result.attachments  # the same content is attached once
    assert attachment.data == data and attachment.mime_type == mime
    assert attachment.name.startswith("image_attachment_") and attachment.name.endswith("." + extension)
    assert len(attachment.name) <= 64
    decoded = [json.loads(r) for r in result.records]
    assert decoded[1]["content"][0] == {"type": "image", "attachment": attachment.name}
    assert decoded[3]["content"][0] == {"type": "image", "attachment": attachment.name}


def test_attachment_names_depend_on_content_only():
    one = run([UserMessage([ImageContent(b64(PNG), "image/png")])]).attachments[0].name
    two = run([UserMessage([ImageContent(b64(PNG + b"!"), "image/png")])]).attachments[0].name
    again = run([UserMessage([TextContent("other")]), UserMessage([ImageContent(b64(PNG), "image/png")])])
    assert one != two and again.attachments[0].name == one


@pytest.mark.parametrize(
    ("image", "reason"),
    [
        (ImageContent(b64(PNG), "image/svg+xml"), "unsupported image type"),
        (ImageContent(b64(JPEG), "image/png"), "does not match"),
        (ImageContent(b64(b"<svg/>"), "image/gif"), "does not match"),
        (ImageContent(b64(b"RIFF\x00\x00\x00\x00WAVE"), "image/webp"), "does not match"),
        (ImageContent("not base64!!", "image/png"), "not valid base64"),
    ],
)
def test_invalid_images_are_not_attached(image, reason):
    result = run([UserMessage([image])])
    assert result.attachments == ()
    part = json.loads(result.records[1])["content"][0]
    assert part["type"] == "image" and "attachment" not in part and reason in part["omitted"]


def test_image_count_limit():
    def image(i):
        return ImageContent(b64(PNG + bytes([i])), "image/png")

    run([UserMessage([image(i) for i in range(MAX_IMAGES)])])
    with pytest.raises(TranscriptError, match="more than 20"):
        run([UserMessage([image(i) for i in range(MAX_IMAGES + 1)])])


def test_image_size_limit():
    big = PNG + b"\x00" * (20 * 1024 * 1024 - len(PNG))
    assert len(run([UserMessage([ImageContent(b64(big), "image/png")])]).attachments) == 1
    with pytest.raises(TranscriptError, match="20 MiB"):
        run([UserMessage([ImageContent(b64(big + b"\x00"), "image/png")])])


def test_transcript_size_limit():
    chunk = "x" * (8 * 1024 * 1024)
    run([UserMessage([TextContent(chunk)]) for _ in range(3)])
    with pytest.raises(TranscriptError, match="32 MiB"):
        run([UserMessage([TextContent(chunk)]) for _ in range(4)])
    with pytest.raises(TranscriptError, match="32 MiB"):
        run([], system="y" * (MAX_TRANSCRIPT_BYTES + 1))


def test_unencodable_content_fails_with_a_clear_error():
    with pytest.raises(TranscriptError, match="message 0 contains text that is not valid Unicode"):
        run([UserMessage([TextContent("lone \ud800 surrogate")])])
    with pytest.raises(TranscriptError, match="message 0 contains a value that is not JSON"):
        run([AssistantMessage([ToolCall("a", "read", {"x": float("inf")})])])


def test_records_are_exact_compact_json():
    """The bytes themselves, not only what they decode to: compact separators, non-ASCII kept,
    keys in insertion order, numbers as Python writes them, `@` escaped."""
    messages = [
        UserMessage([TextContent("héllo @you \"q\"\n\t\x01 ✓ 😀"), ImageContent(b64(PNG), "image/png"),
                     ImageContent("AAAA", "image/bmp")]),
        AssistantMessage([
            ThinkingContent("hm"),
            TextContent("ok"),
            ToolCall("c@1", "read", {"path": "a@b", "n": [1, 2.5, -0.0, 1e100, True, None], "d": {"z": 1, "a": {}}}),
            ToolCall("c2", "gone", {}),
        ]),
        ToolResultMessage("c@1", "read", [TextContent("done")], is_error=True),
        ToolResultMessage("zz", "run.shell", []),
    ]
    header, *rest = run(messages).records
    assert header == json.dumps(
        {"type": "transcript", "protocol": PROTOCOL, "instruction": transcript_module.INSTRUCTION,
         "tools": {"read": "mcp__hostlink__read", "run.shell": result_alias("run.shell")}},
        ensure_ascii=False, separators=(",", ":"),
    )
    attachment = "image_attachment_f731c2528f4184b386555de339aeb78f.png"
    assert rest == [
        '{"type":"user","content":[{"type":"text","text":"héllo \\u0040you \\"q\\"\\n\\t\\u0001 ✓ 😀"},'
        f'{{"type":"image","attachment":"{attachment}"}},{{"type":"image","omitted":"unsupported image type"}}]}}',
        '{"type":"assistant","content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":"ok"},'
        '{"type":"toolCall","id":"c\\u00401","name":"read","arguments":{"path":"a\\u0040b",'
        '"n":[1,2.5,-0.0,1e+100,true,null],"d":{"z":1,"a":{}}}},'
        '{"type":"toolCall","id":"c2","name":"removed:gone","arguments":{}}]}',
        '{"type":"toolResult","toolCallId":"c\\u00401","name":"read","isError":true,'
        '"content":[{"type":"text","text":"done"}]}',
        '{"type":"toolResult","toolCallId":"zz","name":"run.shell","unmatched":true,"isError":false,"content":[]}',
    ]


def test_a_large_record_is_encoded_whole():
    """A record of many small values, which the JSON encoder may write in several pieces."""
    arguments = {"numbers": list(range(100_000)), "words": ["a@b"] * 1000}
    _, call = run([AssistantMessage([ToolCall("a", "read", arguments)])]).records
    expected = {"type": "assistant",
                "content": [{"type": "toolCall", "id": "a", "name": "read", "arguments": arguments}]}
    assert call == json.dumps(expected, ensure_ascii=False, separators=(",", ":")).replace("@", "\\u0040")


json_keys = st.one_of(st.text(max_size=5), st.integers(), st.floats(), st.booleans(), st.none(), st.tuples())
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(json_keys, inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=5), json_values, max_size=4))
def test_records_are_what_the_json_module_writes(arguments):
    """Byte for byte, errors included: a value json.dumps refuses (NaN, a tuple key) is refused."""
    expected = {"type": "assistant",
                "content": [{"type": "toolCall", "id": "a", "name": "read", "arguments": arguments}]}
    try:
        text = json.dumps(expected, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        with pytest.raises(TranscriptError, match="message 0 contains a value that is not JSON"):
            run([AssistantMessage([ToolCall("a", "read", arguments)])])
        return
    _, call = run([AssistantMessage([ToolCall("a", "read", arguments)])]).records
    assert call == text.replace("@", "\\u0040")


def test_a_circular_value_is_refused():
    arguments: dict = {}
    arguments["self"] = arguments
    with pytest.raises(TranscriptError, match="message 0 contains a value that is not JSON"):
        run([AssistantMessage([ToolCall("a", "read", arguments)])])


def test_one_value_in_several_records_is_not_taken_for_a_circle():
    """The records share one encoder; a value it finished in one record is fresh in the next."""
    arguments = {"path": {"nested": ["x"]}}
    history = [AssistantMessage([ToolCall("a", "read", arguments)]),
               AssistantMessage([ToolCall("b", "read", arguments)])]
    _, first, second = run(history).records
    assert first.replace('"a"', '"b"') == second


def test_attachment_block_quotes_absolute_paths_once_each():
    block = attachment_block(["/run/private/image_attachment_1.png", "/run/private/image_attachment_2.gif"])
    lines = block.splitlines()
    assert lines[1:] == ['@"/run/private/image_attachment_1.png"', '@"/run/private/image_attachment_2.gif"']
    assert attachment_block([]) == ""
    for bad in ["relative/x.png", '/a"b.png', "/a\nb.png"]:
        with pytest.raises(TranscriptError):
            attachment_block([bad])


# --- append stability -------------------------------------------------------------------

names = st.sampled_from(["read", "run.shell", "gone", "gone.dotted"])
ids = st.sampled_from(["a", "b", "c@1", "d"])
texts = st.text(max_size=20)
images = st.builds(
    ImageContent,
    st.sampled_from([b64(PNG), b64(GIF), "%%%", b64(PNG + b"\x01")]),
    st.sampled_from(["image/png", "image/gif", "image/bmp"]),
)
user_parts = st.one_of(st.builds(TextContent, texts), images)
assistant_parts = st.one_of(
    st.builds(TextContent, texts),
    st.builds(ThinkingContent, texts),
    st.builds(ToolCall, ids, names, st.dictionaries(texts, st.integers() | texts, max_size=3)),
)
messages = st.one_of(
    st.builds(UserMessage, st.lists(user_parts, max_size=3)),
    st.builds(AssistantMessage, st.lists(assistant_parts, max_size=3)),
    st.builds(ToolResultMessage, ids, names, st.lists(user_parts, max_size=2), st.booleans()),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(messages, max_size=12), st.lists(messages, min_size=1, max_size=4))
def test_appending_messages_leaves_earlier_records_byte_identical(history, appended):
    before = run(history)
    after = run(history + appended)
    assert after.records[: len(before.records)] == before.records
    assert len(after.records) == len(before.records) + len(appended)
    assert after.attachments[: len(before.attachments)] == before.attachments
    assert all("@" not in record for record in after.records)


def test_serialization_encodes_each_message_once(monkeypatch):
    """Linear work: one encode per record, each over that record alone (counted, not timed)."""
    calls: list[int] = []
    original = transcript_module._record_encoder

    def counting_encoder():
        encode = original()

        def counting(value):
            encoded = encode(value)
            calls.append(len(encoded))
            return encoded

        return counting

    monkeypatch.setattr(transcript_module, "_record_encoder", counting_encoder)
    for count in (10, 100, 1000):
        history = []
        for i in range(count // 2):
            history.append(AssistantMessage([ToolCall(f"id{i}", "read", {"path": str(i)})]))
            history.append(ToolResultMessage(f"id{i}", "read", [TextContent("r" * 50)]))
        calls.clear()
        result = run(history)
        assert len(calls) == count + 1
        assert sum(calls) == sum(len(record) for record in result.records)


def test_content_a_transcript_cannot_carry_is_refused_by_message():
    """What an embedding program may hand over by mistake: the error names the message."""
    for messages, error in (
        ([UserMessage([ThinkingContent("x")])], "message 0 has content of an unknown type"),
        ([UserMessage([TextContent("a")]), AssistantMessage([ImageContent(b64(PNG), "image/png")])],
         "message 1 has content of an unknown type"),
        (["a bare string"], "message 0 has an unknown role"),
        ([AssistantMessage([ToolCall("a", "read", ["not", "an", "object"])])],
         "a tool call in message 0 has arguments that are not an object"),
        ([UserMessage([ImageContent("A" * (4 * (transcript_module.MAX_IMAGE_BYTES // 3 + 3)), "image/png")])],
         "an image in message 0 exceeds 20 MiB"),
    ):  # fmt: skip
        with pytest.raises(TranscriptError, match=error):
            run(messages)


def test_call_arguments_in_any_mapping_are_carried_as_an_object():
    from types import MappingProxyType

    records = run([AssistantMessage([ToolCall("a", "read", MappingProxyType({"path": "x"}))])]).records
    assert json.loads(records[1])["content"][0]["arguments"] == {"path": "x"}
