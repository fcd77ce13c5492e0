"""The names the tools face gives: `<server>__<tool>`, at most 64 characters, never shared.

The rule (documented on the gateway's docs page): a tool keeps the plain name
`<server>__<tool>` when the tool's name uses only `A-Z a-z 0-9 _ -`, the whole name fits
in 64 characters, and no other (server, tool) pair would get the same plain name (server
`a__b` tool `c` and server `a` tool `b__c` would). Otherwise it gets
`<server>__<cleaned tool, cut>_<8 hex>`: every other character becomes `_`, the name is
cut to fit, and the suffix is the start of the SHA-256 of `server` NUL `tool`, so the
name depends only on that pair and stays the same from one listing to the next.

Resources and resource templates get `hostlink://<server>/<original URI>`; prompts get
`<server>__<prompt>` by the same rule as tools.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable

MAX_NAME = 64
SEPARATOR = "__"
URI_SCHEME = "hostlink://"
_PLAIN = re.compile(r"[A-Za-z0-9_-]+")
_OTHER = re.compile(r"[^A-Za-z0-9_-]")


def plain_name(server: str, item: str) -> str:
    return f"{server}{SEPARATOR}{item}"


def hashed_name(server: str, item: str) -> str:
    suffix = "_" + hashlib.sha256(f"{server}\0{item}".encode()).hexdigest()[:8]
    return plain_name(server, _OTHER.sub("_", item))[: MAX_NAME - len(suffix)] + suffix


def exposed_names(pairs: Iterable[tuple[str, str]]) -> dict[str, tuple[str, str]]:
    """Each exposed name and the (server, name) pair it stands for."""
    pairs = list(dict.fromkeys(pairs))
    counts = Counter(plain_name(server, item) for server, item in pairs)
    names: dict[str, tuple[str, str]] = {}
    for server, item in pairs:
        plain = plain_name(server, item)
        keep = _PLAIN.fullmatch(item) is not None and len(plain) <= MAX_NAME and counts[plain] == 1
        names[plain if keep else hashed_name(server, item)] = (server, item)
    return names


def prefixed_uri(server: str, uri: str) -> str:
    return f"{URI_SCHEME}{server}/{uri}"


def split_uri(uri: str) -> tuple[str, str] | None:
    """(server, original URI) of a prefixed URI, or None when it is not one."""
    if not uri.startswith(URI_SCHEME):
        return None
    server, slash, original = uri[len(URI_SCHEME):].partition("/")
    return (server, original) if server and slash and original else None
