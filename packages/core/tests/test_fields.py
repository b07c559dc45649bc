"""cladelog.core.fields: the common field checks every package applies."""

from __future__ import annotations

from typing import Any

import pytest
from cladelog.core import InputError
from cladelog.core.fields import (
    MAX_SAFE_INTEGER,
    check_keys,
    finite_number,
    require_bool,
    require_date,
    require_int,
    require_list,
    require_mapping,
    require_string,
    safe_count,
    short_text,
    shown,
)


class MyError(InputError):
    pass


def test_the_safe_integer_bound_is_ijson_s() -> None:
    # RFC 7493 section 2.2: integers in [-(2**53)+1, (2**53)-1]
    assert MAX_SAFE_INTEGER == 9007199254740991
    assert float(MAX_SAFE_INTEGER) == MAX_SAFE_INTEGER
    assert float(MAX_SAFE_INTEGER + 2) != MAX_SAFE_INTEGER + 2  # beyond it a double rounds


@pytest.mark.parametrize(
    ("value", "text"),
    [(None, "null"), (True, "boolean true"), (False, "boolean false"), (0.5, "0.5"),
     (7, "7"), (2**60, "a huge integer"), ("abc", "string 'abc'"), ([1], "list"),
     ("a\nb\u00e9", "string 'a\\nb\\xe9'"), ("x" * 100, "string '" + "x" * 37 + "...'")],
)
def test_shown(value: Any, text: str) -> None:
    assert shown(value) == text


def test_short_text_is_one_ascii_line() -> None:
    assert short_text("\u2603\r\n", 40) == "\\u2603\\r\\n"
    assert short_text("abcdef", 5) == "ab..."


def test_finite_number() -> None:
    assert finite_number(3, "x") == 3.0 and type(finite_number(3, "x")) is float
    assert finite_number(MAX_SAFE_INTEGER, "x") == float(MAX_SAFE_INTEGER)
    for bad, message in [
        (True, "x: must be a number, got boolean true"),
        ("1", "x: must be a number, got string '1'"),
        (float("nan"), "x: must be finite, got nan"),
        (float("-inf"), "x: must be finite, got -inf"),
        (MAX_SAFE_INTEGER + 1, "x: integer out of range, must satisfy |n| <= 2**53 - 1"),
        (-MAX_SAFE_INTEGER - 1, "x: integer out of range, must satisfy |n| <= 2**53 - 1"),
    ]:
        with pytest.raises(InputError) as info:
            finite_number(bad, "x")
        assert str(info.value) == message


def test_safe_count_and_the_error_class() -> None:
    assert safe_count(0, "n") == 0
    assert safe_count(MAX_SAFE_INTEGER, "n") == MAX_SAFE_INTEGER
    with pytest.raises(MyError, match=r"^a\.n: must be a non-negative integer, got -1$"):
        safe_count(-1, "a.n", MyError)
    with pytest.raises(MyError, match="got a huge negative integer"):
        safe_count(-(2**70), "a.n", MyError)
    with pytest.raises(MyError, match=r"must be <= 2\*\*53 - 1"):
        safe_count(MAX_SAFE_INTEGER + 1, "a.n", MyError)
    with pytest.raises(MyError, match=r"got 1\.0$"):
        safe_count(1.0, "a.n", MyError)


def test_require_int() -> None:
    assert require_int(5, "i", low=1, high=5) == 5
    for bad in (0, 6, True, 2.0, None):
        with pytest.raises(InputError, match=r"^i: must be an integer in \[1, 5\], got "):
            require_int(bad, "i", low=1, high=5)


def test_structures() -> None:
    assert require_mapping({"a": 1}, "m") == {"a": 1}
    with pytest.raises(InputError, match=r"^m: must be an object, got list$"):
        require_mapping([], "m")
    with pytest.raises(InputError, match=r"^m: object keys must be strings, got 1$"):
        require_mapping({1: 2}, "m")
    assert require_list((1, 2), "l") == [1, 2]
    with pytest.raises(InputError, match=r"^l: must be an array, got string 'x'$"):
        require_list("x", "l")
    assert require_string("s", "s") == "s"
    with pytest.raises(InputError, match=r"^s: must be a non-empty string, got string ''$"):
        require_string("", "s")
    assert require_bool(False, "b") is False
    with pytest.raises(InputError, match=r"^b: must be true or false, got 0$"):
        require_bool(0, "b")


def test_check_keys_names_the_first_problem_in_sorted_order() -> None:
    req, opt = frozenset({"b", "a"}), frozenset({"c"})
    check_keys({"a": 1, "b": 2, "c": 3}, "f", req, opt)
    with pytest.raises(InputError, match=r"^f\.a: is required$"):
        check_keys({}, "f", req, opt)
    with pytest.raises(InputError, match=r"^f\.x: is not a known field$"):
        check_keys({"z": 0, "x": 0, "a": 1, "b": 2}, "f", req, opt)
    with pytest.raises(InputError, match=r"^f\.x\\ny: is not a known field$"):
        check_keys({"x\ny": 0, "a": 1, "b": 2}, "f", req, opt)


@pytest.mark.parametrize("bad", ["2024-02-30", "2024-1-01", "20240101", 20240101, None])
def test_require_date(bad: Any) -> None:
    assert require_date("2024-02-29", "d") == "2024-02-29"  # a leap day
    with pytest.raises(InputError, match=r"^d: must be a date YYYY-MM-DD, got "):
        require_date(bad, "d")


def test_did_you_mean_guesses_the_closest_name_or_lists_them() -> None:
    from cladelog.core.fields import did_you_mean

    known = ["signal_floor", "block", "abstain"]
    assert did_you_mean("signal_flor", known) == "(did you mean 'signal_floor'?)"
    assert did_you_mean("zzz", known) == "(known: abstain, block, signal_floor)"
    assert did_you_mean("zzz", known, list_known=False) == ""
    assert did_you_mean("blok", known, list_known=False) == "(did you mean 'block'?)"
    assert did_you_mean("anything", []) == ""
    assert did_you_mean("signal_flor" * 10, known) == "(known: abstain, block, signal_floor)"
