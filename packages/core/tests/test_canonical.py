"""The core RFC 8785 encoder: public vectors, a cross-check against `rfc8785`, and refusals."""

from __future__ import annotations

import json
import math
import struct
from collections import OrderedDict
from enum import Enum, IntEnum
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from cladelog.core.canonical import (
    MAX_DEPTH,
    MAX_SAFE_INTEGER,
    CanonicalError,
    canonical_bytes,
    canonical_digest,
    es6_number,
)
from hypothesis import given, settings
from hypothesis import strategies as st

VECTORS = json.loads(
    (Path(__file__).parent / "vectors" / "jcs_rfc8785_vectors.json").read_text(encoding="utf-8")
)


@pytest.mark.parametrize("case", VECTORS["canonicalization_cases"], ids=lambda c: c["name"])
def test_documents(case: dict[str, str]) -> None:
    value = json.loads(case["input_text"])
    got = canonical_bytes(value)
    assert got == case["expected_output_utf8"].encode("utf-8")
    assert got.hex() == case["expected_output_hex"]
    assert got == rfc8785.dumps(value)


def _double(hex16: str) -> float:
    return float(struct.unpack(">d", bytes.fromhex(hex16.rjust(16, "0")))[0])


@pytest.mark.parametrize(
    "vec", VECTORS["number_vectors"] + VECTORS["es6_sample_lines"], ids=lambda v: v["ieee754_hex"]
)
def test_numbers(vec: dict[str, str | None]) -> None:
    value = _double(str(vec["ieee754_hex"]))
    if vec["expected"] is None:
        with pytest.raises(CanonicalError):
            canonical_bytes(value)
        with pytest.raises(CanonicalError):
            es6_number(value)
        return
    want = str(vec["expected"]).encode()
    assert canonical_bytes(value) == want
    assert canonical_bytes({"n": [value]}) == b'{"n":[' + want + b"]}"
    assert es6_number(value) == want.decode()


def test_digest_is_sha256_of_bytes() -> None:
    import hashlib

    assert (
        canonical_digest({"b": 1, "a": [True, None]})
        == hashlib.sha256(b'{"a":[true,null],"b":1}').hexdigest()
    )


# -- cross-check against the rfc8785 package -------------------------------------------------

# Keys mix ASCII, BMP characters above U+E000 and non-BMP characters: the range where
# UTF-16 code-unit order differs from code-point order.
_KEY_CHARS = st.one_of(
    st.characters(min_codepoint=0x20, max_codepoint=0x7E),
    st.characters(min_codepoint=0xE000, max_codepoint=0xFFFD),
    st.characters(min_codepoint=0x10000, max_codepoint=0x10FFFF),
    st.characters(blacklist_categories=("Cs",)),
)
_KEYS = st.text(_KEY_CHARS, max_size=6)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=12),
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(_KEYS, inner, max_size=6),
    max_leaves=30,
)


@pytest.mark.parametrize("number", [
    # around the cut-offs where Python's repr and ECMAScript's Number#toString part ways
    1e-4, 9.99e-5, 5e-5, 1.5e-5, 1e-5, 9.99e-6, 1e-6, 1e-7, 1.25e-7,
    1e15, 1e16, 1e20, 1e21, 1.2345678901234567e20, 2.0**53, 2.0**53 + 2, -0.00005,
])
def test_numbers_at_the_format_cut_offs_match_rfc8785(number: float) -> None:
    """Fixed values (randomised tests may miss a narrow band such as [1e-5, 1e-4))."""
    assert canonical_bytes({"n": number, "l": [number]}) == rfc8785.dumps(
        {"n": number, "l": [number]})


@settings(max_examples=500, deadline=None)
@given(_JSON)
def test_matches_rfc8785_package(value: Any) -> None:
    assert canonical_bytes(value) == rfc8785.dumps(value)


@settings(max_examples=1500, deadline=None)
@given(st.integers(0, 2**64 - 1))
def test_random_doubles_match_rfc8785(bits: int) -> None:
    value = struct.unpack(">d", bits.to_bytes(8, "big"))[0]
    if math.isfinite(value):
        assert canonical_bytes(value) == rfc8785.dumps(value)
    else:
        with pytest.raises(CanonicalError):
            canonical_bytes(value)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_KEYS, st.integers(0, 9), min_size=2, max_size=8))
def test_keys_sorted_by_utf16_code_units(value: dict[str, int]) -> None:
    got = json.loads(canonical_bytes(value))
    keys = list(got)
    assert keys == sorted(value, key=lambda k: k.encode("utf-16-be"))


def test_utf16_order_example() -> None:
    # U+FB33 (one code unit 0xFB33) sorts after U+1F602 (surrogates 0xD83D 0xDE02).
    assert canonical_bytes({"\ufb33": 1, "\U0001f602": 2}) == (
        '{"\U0001f602":2,"\ufb33":1}'.encode()
    )


def test_subclasses_are_validated_and_encoded_by_value() -> None:
    class Colour(str, Enum):  # noqa: UP042 - the mixin whose str() is not its value
        RED = "red"

    class Small(IntEnum):
        THREE = 3

    class Big(IntEnum):
        HUGE = 2**60

    assert canonical_bytes(OrderedDict([("b", Colour.RED), ("a", Small.THREE)])) == (
        b'{"a":3,"b":"red"}'
    )
    with pytest.raises(CanonicalError, match=r"\$\[0\]: integer"):
        canonical_bytes([Big.HUGE])
    with pytest.raises(CanonicalError, match="not a string"):
        canonical_bytes(OrderedDict([(1, 2)]))
    with pytest.raises(CanonicalError, match=r"\$.a: integer"):
        canonical_bytes(OrderedDict(a=2**60))


# -- refusals -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (math.nan, r"\$: NaN and Infinity"),
        ({"a": [1, math.inf]}, r"\$.a\[1\]: NaN and Infinity"),
        ({"a": 1.5, "b": math.nan}, r"\$.b: NaN and Infinity"),
        ([0.5, (-math.inf,)], r"\$\[1\]\[0\]: NaN and Infinity"),
        (-math.inf, "NaN and Infinity"),
        (MAX_SAFE_INTEGER + 1, "outside the safe range"),
        (-MAX_SAFE_INTEGER - 1, "outside the safe range"),
        ({"x": 2**64}, r"\$.x: integer"),
        ({1: "a"}, "object key 1 is not a string"),
        ({None: "a"}, "is not a string"),
        ({("t",): "a"}, "is not a string"),
        ("\ud800", "lone surrogate"),
        ({"k\udfff": 1}, "lone surrogate"),
        ([b"bytes"], r"\$\[0\]: bytes is not a JSON value"),
        ({"s": {1, 2}}, "set is not a JSON value"),
        (object(), "object is not a JSON value"),
    ],
)
def test_refusals(value: Any, fragment: str) -> None:
    with pytest.raises(CanonicalError, match=fragment):
        canonical_bytes(value)


def test_safe_integer_bounds_are_accepted() -> None:
    # 2**53 - 1 = 9007199254740991
    assert canonical_bytes([MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER]) == (
        b"[9007199254740991,-9007199254740991]"
    )


def _nest(levels: int) -> Any:
    value: Any = 0
    for _ in range(levels):
        value = [value]
    return value


def test_depth_limit() -> None:
    # With `levels` wrapping lists the innermost 0 sits `levels` steps below the root.
    assert canonical_bytes(_nest(MAX_DEPTH)) == b"[" * MAX_DEPTH + b"0" + b"]" * MAX_DEPTH
    with pytest.raises(CanonicalError, match=f"nested deeper than {MAX_DEPTH}"):
        canonical_bytes(_nest(MAX_DEPTH + 1))
    deep: Any = {}
    for _ in range(MAX_DEPTH + 1):
        deep = {"k": deep}
    with pytest.raises(CanonicalError, match="nested deeper"):
        canonical_bytes(deep)
    # Far deeper input is refused cleanly, not with a RecursionError.
    with pytest.raises(CanonicalError):
        canonical_bytes(_nest(100_000))


# -- the orjson path against the pure encoder ------------------------------------------------
# canonical_bytes hands plain values to orjson where every number in them is one orjson
# writes as RFC 8785 does; everything else goes to the pure encoder (canonical._encode),
# the reference. Both must give the same bytes for every value orjson is handed.
_PLAIN_FLOATS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(min_value=1e-4, max_value=1e16, exclude_max=True),
    st.floats(min_value=-1e16, max_value=-1e-4, exclude_min=True),
    st.sampled_from([1e-4, 9.999999999999999e15, 0.1, 0.5, 1.5, 123456.789, -0.0, 0.0,
                     1e16, 20.0, 2.0**53, 5e-324]),
)
_ORJSON_JSON = st.recursive(
    st.one_of(_SCALARS, _PLAIN_FLOATS,
              st.text(st.characters(max_codepoint=0x7F), max_size=6),
              st.text(st.characters(codec="utf-8"), max_size=6)),
    lambda inner: st.lists(inner, max_size=5) | st.tuples(inner, inner)
    | st.dictionaries(st.one_of(_KEYS, st.text(st.characters(max_codepoint=0x7F),
                                                   max_size=4)), inner, max_size=6),
    max_leaves=30,
)


def _reference(value: Any) -> bytes:
    from cladelog.core import canonical

    canonical._scan(value, "$", 0)
    out: list[str] = []
    canonical._encode(value, out)
    return "".join(out).encode("utf-8")


@settings(max_examples=3000, deadline=None)
@given(_ORJSON_JSON)
def test_the_orjson_path_equals_the_pure_encoder(value: Any) -> None:
    import orjson
    from cladelog.core import canonical

    assert canonical_bytes(value) == _reference(value)
    try:
        slow = canonical._quick(value, 0)
    except canonical._Invalid:
        return
    if not slow:  # what canonical_bytes hands to orjson, compared with the reference
        assert orjson.dumps(value, option=canonical._ORJSON_OPTIONS) == _reference(value)


def test_the_orjson_path_takes_the_common_cases() -> None:
    """Plain payloads go to orjson (a canonical_bytes that never did would still pass the
    property above)."""
    from cladelog.core import canonical

    for value in ({"a": 1, "b": [True, None, "x\n"], "c": {"d": 0.25}}, "text", [1, 2],
                  {"score": 1.5e-3, "tags": ["a"]}):
        assert canonical._quick(value, 0) is False
    for value in ({"é": 1}, {"n": 1e-7}, {"n": 1e16}, {"n": 2.0}):
        assert canonical._quick(value, 0) is True
    # numbers as members and items (checked in the loop, not by a call per number)
    for value in ({"a": [0.25, -3.5], "b": 1e-4}, [123456.789, {"c": -0.5}]):
        assert canonical._quick(value, 0) is False
    for value in ({"a": 1.0}, [0.5, 5e-5], {"a": [1e16]}, [[-2.0**53]]):
        assert canonical._quick(value, 0) is True
    assert canonical_bytes({"a": [1.0, 0.5], "b": 1e21, "c": -0.0, "d": 5e-7}) == \
        b'{"a":[1,0.5],"b":1e+21,"c":0,"d":5e-7}'
