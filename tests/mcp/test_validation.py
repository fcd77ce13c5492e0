"""The call path's schema checks: the compiled validator decides, jsonschema explains, and
nothing a schema refers to is ever fetched."""

from __future__ import annotations

import pytest

import hostlink.mcp.runtime.validation as validation
from adversarial.support import untouched_url
from hostlink.mcp.runtime.validation import InvalidSchema, violations

SCHEMA = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 5}, "days": {"type": "integer"}},
          "required": ["city"], "additionalProperties": False}


def test_a_valid_value_has_no_violations_and_a_refused_one_names_each():
    assert violations(SCHEMA, {"city": "Rome", "days": 3}) == []
    errors = violations(SCHEMA, {"city": "Amsterdam", "days": "3", "extra": 1})
    assert sorted(error.message for error in errors) == sorted([
        "'Amsterdam' is too long", "'3' is not of type 'integer'",
        "Additional properties are not allowed ('extra' was unexpected)"])


def test_both_validators_are_built_once_per_schema():
    validation._validators.cache_clear()
    for _ in range(3):
        violations(SCHEMA, {"city": "Rome"})
    fast, _full = validation._validators(validation.json.dumps(SCHEMA, sort_keys=True))
    assert fast is not None and validation._validators.cache_info().misses == 1


def test_a_schema_only_pythons_regex_engine_reads_is_checked_by_jsonschema_alone():
    schema = {"type": "string", "pattern": r"^(?P<word>a+)(?P=word)$"}  # a backreference
    fast, _ = validation._validators(validation.json.dumps(schema, sort_keys=True))
    assert violations(schema, "aaaa") == [] and [e.message for e in violations(schema, "aaa")]
    assert fast is None or fast.is_valid("aaaa")


def test_an_invalid_schema_is_refused():
    with pytest.raises(InvalidSchema):
        violations({"type": "strin"}, "x")


def test_a_reference_outside_the_schema_is_never_fetched():
    with untouched_url() as url, pytest.raises(InvalidSchema, match="refers to a schema it does not contain"):
        violations({"type": "object", "properties": {"a": {"$ref": url}}}, {"a": 1})


def test_the_validators_kept_by_schema_identity_are_bounded(monkeypatch):
    """A long session meets many tools' schemas: the identity cache keeps the most recent only."""
    monkeypatch.setattr(validation, "_by_identity", validation.OrderedDict())
    schemas = [{"type": "integer", "minimum": n} for n in range(validation._RECENT + 1)]
    for schema in schemas:
        assert violations(schema, 10_000) == []
    kept = validation._by_identity
    assert len(kept) == validation._RECENT and id(schemas[0]) not in kept and id(schemas[-1]) in kept
