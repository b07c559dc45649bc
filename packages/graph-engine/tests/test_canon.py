"""The canonical-facts barrier (SPEC §1.12): snapping rules, schema errors, digest."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from cladelog.graph_engine import (
    GraphEngineError,
    canon_facts,
    canon_value,
    compile_fact_schema,
    digest,
    norm_token,
)


def snap(spec: dict[str, Any], raw: Any) -> tuple[Any, bool, bool]:
    return canon_value(raw, compile_fact_schema({"k": spec})["k"])


def test_norm_token() -> None:
    assert norm_token("  Hello \t  World\n") == "hello world"
    assert norm_token(12) == "12" and norm_token(True) == "true" and norm_token(None) == "null"


@pytest.mark.parametrize(("grain", "raw", "want"), [
    (1, "1,234", 1),          # parseFloat reads the prefix "1"
    (5, -7.5, -5),            # -7.5/5 = -1.5, Math.round -> -1, * 5 = -5 (half toward +inf)
    (0.1, 0.26, 0.3),         # 2.6 -> 3 -> 0.3, fixed to one decimal
    (10, "1234.9 units", 1230),  # 123.49 -> 123 -> 1230
    (0.25, "0.6", 0.5),       # 2.4 -> 2 -> 0.5
])
def test_grain(grain: float, raw: Any, want: float) -> None:
    assert snap({"grain": grain}, raw) == (want, False, False)


def test_numbers_and_misses() -> None:
    assert snap({"type": "int"}, 2.5) == (3, False, False)     # Math.round(2.5) = 3
    assert snap({"type": "int"}, "-2.5") == (-2, False, False)  # Math.round(-2.5) = -2
    assert snap({"type": "number"}, "4.25kg") == (4.25, False, False)
    assert snap({"type": "number", "default": 0}, "abc") == (0, True, False)
    assert snap({"grain": 1}, "Infinity")[1] is True
    assert snap({"type": "int"}, True)[1] is True


@pytest.mark.parametrize(("raw", "want"), [
    (True, True), (False, False), ("Yes", True), (" y ", True), ("1", True),
    ("NO", False), ("n", False), ("", False), ("0", False), (0, False), (1, True),
])
def test_bool(raw: Any, want: bool) -> None:
    assert snap({"type": "bool"}, raw) == (want, False, False)


def test_bool_miss() -> None:
    assert snap({"type": "bool"}, "maybe") == (None, True, False)


def test_strings_and_ids() -> None:
    assert snap({"type": "string"}, "  Two   Words ") == ("Two Words", False, False)
    assert snap({}, "  Keep  Case ") == ("Keep Case", False, False)
    assert snap({"type": "id"}, "  id  7 ") == ("id  7", False, False)  # trimmed only
    assert snap({"type": "id", "default": "none"}, "   ") == ("none", False, False)


@pytest.mark.parametrize("spec", [{"type": "id"}, {"type": "string"}, {}])
def test_a_missing_id_or_string_is_not_a_miss(spec: dict[str, Any]) -> None:
    # SPEC §1.12: id, string and untyped facts give the default or null, never a miss
    for raw in (None, "", "  "):
        assert snap(spec, raw) == (None, False, False)
        assert snap({**spec, "default": "d"}, raw) == ("d", False, False)
    # canon_value takes a raw spec too
    assert canon_value(None, spec) == (None, False, False)


@pytest.mark.parametrize("spec", [{"type": "int"}, {"type": "number"}, {"type": "bool"},
                                  {"grain": 5}, {"enum": ["a"]}])
def test_a_missing_typed_value_is_a_miss(spec: dict[str, Any]) -> None:
    assert snap(spec, None) == (None, True, False)
    assert canon_value(None, spec) == (None, True, False)


def test_canon_facts_misses_only_the_typed_keys() -> None:
    schema = {"s": {"type": "string"}, "u": {}, "i": {"type": "id", "default": "x"},
              "n": {"type": "int"}, "b": {"type": "bool"}, "e": {"enum": ["a"]},
              "g": {"grain": 1}, "m": {"type": "number"}}
    got = canon_facts({}, schema)
    assert got.facts == {"s": None, "u": None, "i": "x", "n": None, "b": None, "e": None,
                         "g": None, "m": None}
    assert got.misses == ["n", "b", "e", "g", "m"]


def test_canon_value_names_a_bad_raw_spec() -> None:
    with pytest.raises(GraphEngineError, match=r"^spec\.type: must be one of"):
        canon_value("x", {"type": "date"})


def test_enum_and_synonyms() -> None:
    spec = {"enum": ["High", "low"], "synonyms": {"High": ["severe", "Critical"]},
            "default": "low"}
    assert snap(spec, " HIGH ") == ("High", False, False)
    assert snap(spec, "critical") == ("High", False, True)
    assert snap(spec, "medium") == ("low", True, False)
    assert snap(spec, None) == ("low", True, False)


@pytest.mark.parametrize(("spec", "message"), [
    ({"enum": ["A", "a "]}, "normalizes like"),
    ({"enum": ["a", "b"], "synonyms": {"c": ["x"]}}, "not a member"),
    ({"enum": ["a", "b"], "synonyms": {"a": ["B"]}}, "collides with a member"),
    ({"enum": ["a", "b"], "synonyms": {"a": ["x"], "b": ["x"]}}, "collides with an alias"),
    ({"enum": []}, "non-empty list"),
    ({"grain": 0}, "positive number"),
    ({"type": "date"}, "must be one of"),
])
def test_schema_errors(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(GraphEngineError, match=message) as info:
        compile_fact_schema({"sev": spec}, "Classify.prompt.facts")
    assert str(info.value).startswith("Classify.prompt.facts.sev")


def test_canon_facts_has_every_key() -> None:
    schema = {"severity": {"enum": ["high", "low"], "synonyms": {"high": ["urgent"]}},
              "score": {"grain": 5, "from": "rawScore"}, "tag": {"type": "id"}}
    got = canon_facts({"severity": "Urgent", "rawScore": "12", "score": 99}, schema)
    assert got.facts == {"severity": "high", "score": 10, "tag": None}  # 12/5=2.4 -> 2 -> 10
    assert got.misses == [] and got.synonyms == {"severity": "urgent"}  # an id never misses
    assert canon_facts("not an object", schema).misses == ["severity", "score"]


def test_digest_covers_whole_values() -> None:
    # Q12: nested keys count; RFC 8785 sorts keys and writes 1200, not 1200.0
    want = hashlib.sha256(b'{"a":{"b":1},"n":1200}').hexdigest()
    assert digest({"n": 1200.0, "a": {"b": 1}}) == want
    assert digest({"a": {"b": 1}}) != digest({"a": {"b": 2}})
