"""JSON Schema checks on the call path: a compiled validator (jsonschema-rs) decides whether
a value is valid, and only a refused value is explained by `jsonschema`, whose errors name
every violation and its field. Checking the mcp tool's input and a call's arguments was most
of what a call cost beyond the SDK's own (about 190 us of 860 against the reference server's
echo); the compiled check takes under 1 us.

A schema the compiled validator cannot take (a regular expression only Python's engine
reads, say) is checked by `jsonschema` alone; every schema is checked once, when its
validator is built, never on each call. A `$ref` to anything outside the schema is never
fetched (both validators would fetch it over HTTP by default, so a server's schema could make
hostlink request any URL): such a schema cannot be checked, so it counts as invalid.
"""

from __future__ import annotations

import functools
import json
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any


class InvalidSchema(ValueError):
    """The schema itself is not a valid JSON Schema (or refers to one it does not contain)."""


def violations(schema: Mapping[str, Any], instance: Any) -> list[Any]:
    """`instance`'s violations of `schema` (`jsonschema` errors, by path); none when
    valid. Raises InvalidSchema for a schema that is not valid itself."""
    fast, full = _validators_of(schema)
    if fast is not None and fast.is_valid(instance):
        return []
    from referencing.exceptions import Unresolvable

    try:
        return sorted(full.iter_errors(instance), key=lambda error: list(error.path))
    except Unresolvable:
        raise InvalidSchema("the schema refers to a schema it does not contain") from None


_RECENT = 128
_by_identity: OrderedDict[int, tuple[Mapping[str, Any], tuple[Any, Any]]] = OrderedDict()


def _validators_of(schema: Mapping[str, Any]) -> tuple[Any, Any]:
    """The validators of `schema`, found by identity first: a server's tool keeps its schema
    object across calls, and keying by content (`json.dumps`) cost more than the check. The
    entry holds the schema, so its id cannot be reused while it is cached."""
    key = id(schema)
    entry = _by_identity.get(key)
    if entry is not None and entry[0] is schema:
        _by_identity.move_to_end(key)
        return entry[1]
    validators = _validators(json.dumps(schema, sort_keys=True))
    _by_identity[key] = (schema, validators)
    if len(_by_identity) > _RECENT:
        _by_identity.popitem(last=False)
    return validators


@functools.lru_cache(maxsize=_RECENT)
def _validators(schema_json: str) -> tuple[Any, Any]:
    """The compiled and the explaining validator of one schema (a bad schema is not cached)."""
    import jsonschema_rs
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for
    from referencing import Registry

    schema = json.loads(schema_json)
    cls = validator_for(schema)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        raise InvalidSchema(exc.message) from None
    try:
        fast = jsonschema_rs.validator_for(schema, retriever=_never_fetch)
    except ValueError:  # jsonschema_rs.ValidationError is one: a schema it cannot take
        fast = None
    return fast, cls(schema, registry=Registry())  # an empty registry's retrieval refuses every URI


def _never_fetch(uri: str) -> Any:
    raise ValueError("schemas outside the tool's own are not fetched")

