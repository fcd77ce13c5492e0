"""The versioned semantic transcript a provider request sends Claude.

Claude Code is stateless here: every request resends the host's whole context. It becomes
one header record (protocol id, instruction, tool-name map) and one compact JSON record per
message. A record depends only on its message and the messages before it, so appending a
message leaves every earlier record byte-identical and Claude's prompt cache keeps the
prefix. Only model-visible content is kept: text, reasoning, tool calls, tool results with
their error flag, images. Usage, stop reasons, model ids and the like are omitted.

Claude expands `@path` mentions in its input, so every literal `@` in a record is written
as the JSON escape `\\u0040`; the only `@` references Claude sees are the provider's own,
in the trailing block from `attachment_block`, naming validated, content-addressed
image files.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]  # typeshed omits the C encoder
from pathlib import PurePath
from typing import Any

from hostlink.claude_code.catalog import Catalog, qualified_name, removed_label
from hostlink.host import (
    IMAGE_EXTENSIONS,
    AssistantMessage,
    Context,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

PROTOCOL = "hostlink-claude-transcript/1"
MAX_TRANSCRIPT_BYTES = 32 * 1024 * 1024
MAX_IMAGES = 20
MAX_IMAGE_BYTES = 20 * 1024 * 1024
_MAX_IMAGE_BASE64 = 4 * (MAX_IMAGE_BYTES // 3 + 1) + 4
ATTACHMENT_PREFIX = "image_attachment_"


INSTRUCTION = (
    "The host application owns this conversation and resends all of it with every request. "
    "Each following record is one message, oldest first, as JSON: user messages, your "
    "earlier assistant turns (text, thinking and tool calls) and tool results (isError marks "
    "a failed call). Continue as the assistant from the last record. The field 'tools' maps "
    "each host tool name used in the records to the tool you call to use it; calling a tool "
    "proposes the call to the host, which runs it and answers in a later request. A tool "
    "named 'removed:...' is no longer available and cannot be called. The JSON escape "
    "\\u0040 in a record stands for an at sign. An image appears as an attachment name; the "
    "image file of that name is attached to this message."
)


class TranscriptError(ValueError):
    """The context cannot be sent to Claude (too large, too many images, not encodable)."""


@dataclass(frozen=True)
class Attachment:
    name: str
    data: bytes
    mime_type: str


@dataclass(frozen=True)
class Transcript:
    system_prompt: str
    records: tuple[str, ...]
    attachments: tuple[Attachment, ...]


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _record_encoder() -> Callable[[Any], str]:
    """What encodes one serialization's records: compact JSON, every `@` escaped (`@`
    only occurs in strings).

    `_ENCODER.encode(value)` makes this same C encoder from the same arguments and joins
    the pieces it writes; made once per serialization, a record skips set-up that costs
    about a quarter of encoding it that way. Sharing the encoder is sound: its
    circular-reference markers are empty again after every record it finishes, and a record
    it cannot finish ends the serialization.
    """
    encoder = c_make_encoder({}, _ENCODER.default, encode_basestring, None, ":", ",", False, False, False)

    def encode(value: Any) -> str:
        return "".join(encoder(value, 0)).replace("@", "\\u0040")

    return encode


def serialize(context: Context, catalog: Catalog) -> Transcript:
    """Encode `context` once, message by message (linear in its size)."""
    state = _State(catalog)
    header = {
        "type": "transcript",
        "protocol": PROTOCOL,
        "instruction": INSTRUCTION,
        "tools": {entry.name: qualified_name(entry.alias) for entry in catalog.entries},
    }
    state.add_text(context.system_prompt, "the system prompt")
    records = [state.add_record(header, "the transcript header")]
    for index, message in enumerate(context.messages):
        records.append(state.add_record(state.message_record(message, index), index))
    return Transcript(context.system_prompt, tuple(records), tuple(state.attachments.values()))


def attachment_block(paths: Sequence[str | PurePath]) -> str:
    """The trailing block naming each attachment file once as a quoted absolute `@"…"` path.

    The paths are the provider's own private files; anything that could break the quoting
    is refused rather than escaped.
    """
    if not paths:
        return ""
    lines = ["Attached image files (each file name is an attachment name used in the records):"]
    for path in paths:
        text = str(path)
        if not PurePath(text).is_absolute() or any(c == '"' or ord(c) < 0x20 or c == "\x7f" for c in text):
            raise TranscriptError("an attachment path must be absolute and free of quotes and controls")
        lines.append(f'@"{text}"')
    return "\n".join(lines)


def _describe(what: str | int) -> str:
    """What an error names: a message by its index, formatted only when an error is raised."""
    return f"message {what}" if isinstance(what, int) else what


class _State:
    """What serializing one context accumulates: sizes, attachments, pending tool calls."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.encode = _record_encoder()
        self.size = 0
        self.attachments: dict[str, Attachment] = {}
        self.calls: dict[str, str] = {}  # unanswered tool-call id -> tool name as recorded

    def add_text(self, text: str, what: str | int) -> None:
        if text.isascii():  # no copy needed to count the bytes of the common case
            self.size += len(text)
        else:
            try:
                self.size += len(text.encode("utf-8"))
            except UnicodeEncodeError:
                raise TranscriptError(f"{_describe(what)} contains text that is not valid Unicode") from None
        if self.size > MAX_TRANSCRIPT_BYTES:
            raise TranscriptError(
                f"the transcript exceeds {MAX_TRANSCRIPT_BYTES // (1024 * 1024)} MiB; "
                "compact or shorten the conversation"
            )

    def add_record(self, value: dict[str, Any], what: str | int) -> str:
        try:
            record = self.encode(value)
        except (TypeError, ValueError):
            raise TranscriptError(f"{_describe(what)} contains a value that is not JSON") from None
        self.add_text(record, what)
        return record

    def tool_name(self, name: str) -> str:
        """How a record names a tool: the host name if active, else its removed label."""
        if self.catalog.alias_for(name) is not None:
            return name
        return self.catalog.historical_labels.get(name) or removed_label(name)

    def message_record(self, message: Any, index: int) -> dict[str, Any]:
        if isinstance(message, UserMessage):
            return {"type": "user", "content": [self.user_part(part, index) for part in message.content]}
        if isinstance(message, AssistantMessage):
            return {"type": "assistant", "content": [self.assistant_part(part, index) for part in message.content]}
        if isinstance(message, ToolResultMessage):
            return self.tool_result(message, index)
        raise TranscriptError(f"message {index} has an unknown role")

    def user_part(self, part: Any, index: int) -> dict[str, Any]:
        if isinstance(part, TextContent):
            return {"type": "text", "text": part.text}
        if isinstance(part, ImageContent):
            return self.image(part, index)
        raise TranscriptError(f"message {index} has content of an unknown type")

    def assistant_part(self, part: Any, index: int) -> dict[str, Any]:
        if isinstance(part, TextContent):
            return {"type": "text", "text": part.text}
        if isinstance(part, ThinkingContent):
            return {"type": "thinking", "thinking": part.thinking}
        if isinstance(part, ToolCall):
            name = self.tool_name(part.name)
            self.calls[part.id] = name
            arguments = part.arguments
            if type(arguments) is not dict:  # a plain dict encodes as its copy would, and faster
                if not isinstance(arguments, Mapping):
                    raise TranscriptError(f"a tool call in message {index} has arguments that are not an object")
                arguments = dict(arguments)
            return {"type": "toolCall", "id": part.id, "name": name, "arguments": arguments}
        raise TranscriptError(f"message {index} has content of an unknown type")

    def tool_result(self, message: ToolResultMessage, index: int) -> dict[str, Any]:
        """Pair by tool-call id: a result answers the unanswered call with its id (the latest
        one, should ids repeat) and is named as that call was.

        A result with no such call (an orphan, or a second answer) is kept, named by its own
        tool name, and marked `"unmatched": true`. A call that never gets a result stays as
        proposed: nothing is invented for it, since that would rewrite history later.
        """
        record: dict[str, Any] = {"type": "toolResult", "toolCallId": message.tool_call_id}
        name = self.calls.pop(message.tool_call_id, None)
        if name is None:
            record["name"] = self.tool_name(message.tool_name)
            record["unmatched"] = True
        else:
            record["name"] = name
        record["isError"] = bool(message.is_error)
        record["content"] = [self.user_part(part, index) for part in message.content]
        return record

    def image(self, image: ImageContent, index: int) -> dict[str, Any]:
        """A validated image becomes a content-addressed attachment; any other, a notice."""
        extension = IMAGE_EXTENSIONS.get(image.mime_type)
        if extension is None:
            return {"type": "image", "omitted": "unsupported image type"}
        if len(image.data) > _MAX_IMAGE_BASE64:
            raise TranscriptError(f"an image in message {index} exceeds {MAX_IMAGE_BYTES // (1024 * 1024)} MiB")
        try:
            data = base64.b64decode(image.data, validate=True)
        except (binascii.Error, ValueError):
            return {"type": "image", "omitted": "image data is not valid base64"}
        if len(data) > MAX_IMAGE_BYTES:
            raise TranscriptError(f"an image in message {index} exceeds {MAX_IMAGE_BYTES // (1024 * 1024)} MiB")
        if not _magic_matches(data, image.mime_type):
            return {"type": "image", "omitted": "image data does not match its declared type"}
        name = f"{ATTACHMENT_PREFIX}{hashlib.sha256(data).hexdigest()[:32]}.{extension}"
        if name not in self.attachments:
            if len(self.attachments) >= MAX_IMAGES:
                raise TranscriptError(
                    f"the conversation holds more than {MAX_IMAGES} distinct images; "
                    "compact it or start a new one"
                )
            self.attachments[name] = Attachment(name, data, image.mime_type)
        return {"type": "image", "attachment": name}


def _magic_matches(data: bytes, mime_type: str) -> bool:
    if mime_type == "image/png":
        return data.startswith(b"\x89PNG\r\n\x1a\n")
    if mime_type == "image/jpeg":
        return data.startswith(b"\xff\xd8\xff")
    if mime_type == "image/gif":
        return data.startswith((b"GIF87a", b"GIF89a"))
    return len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP"
