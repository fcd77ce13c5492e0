"""A `--json` listing (`tools`, `resources`, `prompts`) bounded to 1 MiB of entries, with the
`--offset` that goes on."""

from __future__ import annotations

from typing import Any

MAX_JSON_BYTES = 1024 * 1024  # a --json listing; the model's pages are smaller still


def bounded_json_entries(items: list[Any], offset: int, noun: str = "tools") -> tuple[list[Any], str | None]:
    """Entries from `offset` while the JSON stays within MAX_JSON_BYTES (at least one; a
    larger entry alone is replaced by a note); a footer says where a cut listing goes on."""
    from hostlink.host.output import compact_json, one_line

    shown: list[Any] = []
    size = 2
    for item in items[offset:]:
        length = len(compact_json(item).encode()) + 1
        if length > MAX_JSON_BYTES:
            item, length = {"name": one_line(item["name"], 128), "omitted": "entry over 1 MiB"}, 100
        if shown and size + length > MAX_JSON_BYTES:
            break
        shown.append(item)
        size += length
    end = offset + len(shown)
    if end >= len(items):
        return shown, None
    return shown, f"listing cut at 1 MiB: {noun} {offset + 1}-{end} of {len(items)}; next: --offset {end}"
