"""JavaScript value semantics (SPEC Q4), expected values from the ECMAScript rules."""

from __future__ import annotations

import math

import pytest
from cladelog.graph_engine.jsvalue import (
    UNDEFINED,
    js_add,
    js_compare,
    js_loose_eq,
    js_parse_float,
    js_parse_int,
    js_round,
    js_same,
    js_strict_eq,
    to_fact_value,
    to_number,
    to_string,
    truthy,
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [([], True), ({}, True), (0, False), (0.0, False), ("", False), (math.nan, False),
     (None, False), (UNDEFINED, False), ("0", True), (-1, True), (False, False)],
)
def test_truthiness(value: object, expected: bool) -> None:
    assert truthy(value) is expected


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [(UNDEFINED, None, True), (7, "7", True), (True, 1, True), ("1", True, True),
     (0, "", True), (None, 0, False), (UNDEFINED, 0, False), ("a", "a", True),
     ([1], "1", True), (math.nan, math.nan, False)],
)
def test_loose_equality(a: object, b: object, expected: bool) -> None:
    assert js_loose_eq(a, b) is expected


def test_strict_equality_distinguishes_types() -> None:
    assert js_strict_eq(7, 7.0)
    assert not js_strict_eq(7, "7")
    assert not js_strict_eq(None, UNDEFINED)
    assert not js_strict_eq([1], [1])  # arrays compare by identity


@pytest.mark.parametrize(
    ("op", "a", "b", "expected"),
    [(">=", None, 0, True), (">=", UNDEFINED, 0, False), ("<", "10", "9", True),
     ("<", "10", 9, False), ("<", math.nan, 1, False), (">", True, 0, True)],
)
def test_relational_coercions(op: str, a: object, b: object, expected: bool) -> None:
    assert js_compare(op, a, b) is expected


def test_plus_concatenates_strings_and_formats_numbers() -> None:
    assert js_add("a", 1) == "a1"
    assert js_add(1, "2") == "12"
    assert js_add(1.5, " kg") == "1.5 kg"
    assert js_add(1e21, "") == "1e+21"
    assert js_add(None, 1) == 1  # null is 0
    assert js_add([1, 2], 3) == "1,23"  # [1,2] -> "1,2"
    assert math.isnan(js_add(UNDEFINED, 1))


def test_half_up_rounding() -> None:
    assert js_round(2.5) == 3
    assert js_round(-2.5) == -2  # toward +infinity
    assert js_round(-7.5) == -7
    assert js_round(0.49999999999999994) == 0  # floor(x + 0.5) would give 1


def test_parse_float_reads_the_numeric_prefix() -> None:
    assert js_parse_float("1,234") == 1
    assert js_parse_float("  3.5kg") == 3.5
    assert js_parse_float("-Infinityx") == -math.inf
    assert math.isnan(js_parse_float("kg3"))
    assert js_parse_float(".5e1x") == 5


def test_parse_int() -> None:
    assert js_parse_int("42px") == 42
    assert js_parse_int("0x1F") == 31
    assert js_parse_int("ff", 16) == 255
    assert math.isnan(js_parse_int("x"))


def test_to_number() -> None:
    assert to_number("  12 ") == 12
    assert to_number("") == 0
    assert math.isnan(to_number("12px"))
    assert to_number([]) == 0  # [] -> "" -> 0
    assert to_number(True) == 1


@pytest.mark.parametrize(
    ("value", "text"),
    [(1.0, "1"), (0.1 + 0.2, "0.30000000000000004"), (1e21, "1e+21"), (1e-7, "1e-7"),
     (123456789012, "123456789012"), (-0.0, "0"), (math.inf, "Infinity"), (math.nan, "NaN"),
     (None, "null"), (UNDEFINED, "undefined"), (True, "true"), ([1, None, "a"], "1,,a"),
     ({"a": 1}, "[object Object]")],
)
def test_shortest_number_and_string_formatting(value: object, text: str) -> None:
    assert to_string(value) == text


def test_same_is_deep_and_type_aware() -> None:
    assert js_same({"a": [1, 2.0]}, {"a": [1.0, 2]})
    assert not js_same(True, 1)
    assert not js_same({"a": 1}, {"a": 1, "b": 2})


def test_fact_values_are_json() -> None:
    assert to_fact_value({"a": math.nan, "b": (1, 2.0), "c": UNDEFINED}, "x") == {
        "a": None, "b": [1, 2]}
    with pytest.raises(TypeError, match=r"x\.s: set is not a JSON value"):
        to_fact_value({"s": {1}}, "x")
