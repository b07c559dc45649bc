"""The safe expression language (SPEC §1.5), including hostile input."""

from __future__ import annotations

import math
from typing import Any

import pytest
from cladelog.graph_engine import UNDEFINED, ExpressionError, compile_expression
from cladelog.graph_engine.paths import resolve

FACTS: dict[str, Any] = {
    "size": 3, "label": "abc", "xs": [1, 2, 3], "flag": False, "none": None, "q": 7,
    "tags": ["a", "b"], "obj": {"k": 5},
}


def ev(src: str | list[str], names: dict[str, Any] | None = None) -> Any:
    return compile_expression(src).evaluate(lambda p: _path(p), names)


def _path(path: str) -> Any:
    # the real path resolver on one object holding FACTS
    return resolve(path, "o", lambda oid: FACTS if oid == "o" else None)


@pytest.mark.parametrize(
    ("src", "expected"),
    [
        ("1 + 2 * 3", 7),
        ("(1 + 2) * 3", 9),
        ("2 ** 3 ** 2", 512),  # right-associative: 2 ** 9
        ("7 % 4", 3),
        ("'a' + 1", "a1"),
        ("$size + 1", 4),
        ("$size * 10 + $label.length", 33),
        ("$xs.length == 3", True),
        ("$flag || 'x'", "x"),
        ("$size && 'y'", "y"),
        ("!$flag", True),
        ("$none == undefined", True),
        ("$none === undefined", False),
        ("$missing == null", True),
        ("$size > 2 ? 'big' : 'small'", "big"),
        ("[1, 2, 3][1]", 2),
        ("({a: 1, 'b': 2}).b", 2),
        ("1, 2, 3", 3),
        ("typeof $size", 3),  # juxtaposition: evaluates to its last item
        ("($label).toUpperCase()", "ABC"),
        ("$tags.length >= 2 && $q == 7", True),
        ("count($xs, '>', 1)", 2),
        ("count($xs)", 3),
        ("count($xs, '~', 1)", 0),  # unknown op never matches
        ("count(5)", 0),
        ("all([])", True),
        ("all(5)", False),
        ("all($xs, '>', 0)", True),
        ("any($xs, '==', '2')", True),
        ("any(5)", False),
        ("Math.max(1, $size, 2)", 3),
        ("Math.round(2.5)", 3),
        ("Math.floor(-1.5)", -2),
        ("parseInt('12px') + parseFloat('1.5x')", 13.5),
        ("isNaN('x')", True),
        ("Number('7') === 7", True),
        ("String(12) + 1", "121"),
        ("JSON.stringify({a: [1, 'x']})", '{"a":[1,"x"]}'),
        ("JSON.parse('[1,2]').length", 2),
        ("Array.isArray($xs)", True),
        ("$obj.k", 5),
        ("~5 + (1 << 3)", 2),
        ("-1 >>> 28", 15),
        ("$q.toFixed(2)", UNDEFINED),  # method call inside a reference token (Q2)
        ("($q).toFixed(2)", "7.00"),
    ],
)
def test_evaluation(src: str, expected: Any) -> None:
    assert ev(src) == expected


def test_division_by_zero_gives_infinity() -> None:
    assert ev("1 / 0") == math.inf
    assert ev("-1 / 0") == -math.inf
    assert math.isnan(ev("0 / 0"))


def test_names_map_shadows_globals() -> None:
    assert ev("Math + 1", {"Math": 1}) == 2


def test_list_sources_are_anded_and_blanks_dropped() -> None:
    expr = compile_expression(["$size > 1", None, "  ", "$q == 7"])
    assert expr.source == "($size > 1) && ($q == 7)"
    assert expr.test(_path)
    assert compile_expression([]).evaluate(_path) is True  # empty source: default
    assert compile_expression("").evaluate(_path, default=False) is False


def test_refs_are_every_token_minus_first_dollar() -> None:
    expr = compile_expression("$a + $$clock:tick + $q + $b.length")
    assert expr.refs == ("a", "$clock:tick", "q", "b.length")


def test_runtime_errors_make_the_expression_undefined() -> None:
    assert ev("$size()") is UNDEFINED  # calling a number
    assert ev("$missing.x.y") is UNDEFINED
    assert ev("(null).x") is UNDEFINED  # member of null is undefined, not an error
    assert ev("$obj[('constr' + 'uctor')]") is UNDEFINED  # computed blocked key


def test_inside_a_reference_token_a_member_is_a_plain_fact_read() -> None:
    # SPEC §1.5: the path resolver walks ".member" inside tokens; it reads dict keys only
    assert ev("$obj.constructor") is UNDEFINED
    assert ev("$obj.k") == 5


@pytest.mark.parametrize(
    "src",
    ["($obj).constructor", "($obj).__proto__", "({}).prototype", "$obj['constructor']",
     "({__proto__: 1})"],
)
def test_blocked_properties_are_compile_errors(src: str) -> None:
    with pytest.raises(ExpressionError, match="blocked"):
        compile_expression(src)


@pytest.mark.parametrize(
    "src",
    ["1 +", "(1", "a b )", "x = 1", "'open", "{a 1}", "$a ? 1", "#", "f(1,,2)", "[1 2]"],
)
def test_syntax_errors_raise_expression_error(src: str) -> None:
    with pytest.raises(ExpressionError):
        compile_expression(src, "tree.X.ensure")


def test_error_message_names_the_field_path() -> None:
    with pytest.raises(ExpressionError, match=r"^tree\.X\.ensure: "):
        compile_expression("1 +", "tree.X.ensure")


def test_deep_nesting_is_refused_not_a_crash() -> None:
    with pytest.raises(ExpressionError, match="nested"):
        compile_expression("(" * 5000 + "1" + ")" * 5000)
    with pytest.raises(ExpressionError, match="nested"):
        compile_expression("!" * 5000 + "1")
    with pytest.raises(ExpressionError, match="nested"):
        compile_expression("1" + " + 1" * 3000)
    with pytest.raises(ExpressionError, match="nested"):
        compile_expression("[" * 3000 + "]" * 3000)


def test_huge_source_is_refused() -> None:
    with pytest.raises(ExpressionError, match="longer than"):
        compile_expression("'" + "x" * 100_000 + "'")


def test_hostile_runtime_values_do_not_crash() -> None:
    assert ev("Math.pow(10, 400)") == math.inf
    assert ev("10 ** 400") == math.inf
    assert ev("JSON.parse('" + "[" * 50 + "]" * 50 + "').length") == 1
    assert ev("JSON.parse('{bad')") is UNDEFINED
    assert ev("'ab'.repeat(1e9)") is UNDEFINED  # not an allowed method


def test_no_python_escape_hatch() -> None:
    # names that would matter to Python are just undefined identifiers here
    for src in ["__import__('os')", "eval('1')", "globals()", "$obj.__class__",
                "''.__class__", "open('x')"]:
        assert ev(src) is UNDEFINED


NEG0 = -0.0
INF = math.inf
NAN = math.nan


@pytest.mark.parametrize(
    ("src", "expected"),
    [  # every expected value is what node 20 gives for the same source
        ("-0", NEG0), ("1/-0", -INF), ("-0 - 0", NEG0), ("0 * -1", NEG0), ("-5 % 5", NEG0),
        ("0 / -5", NEG0), ("-0 + 0", 0), ('(-1e92)/"-0"', INF), ('("-0") * (" 7 ")', NEG0),
        ("([]) * (-47438.71428571428)", NEG0), ("-null", NEG0), ('+"-0"', NEG0),
        ('Number("-0")', NEG0), ('parseFloat("-0xyz")', NEG0), ('parseInt("-0")', NEG0),
        ('JSON.parse("-0")', NEG0),
        ('JSON.parse("[-0, 12345678901234567890]")[1]', 1.2345678901234567e19),
        ("Math.round(-0.5)", NEG0), ("Math.round(-0.4)", NEG0),
        ("Math.round(-6.084075217308579e-13)", NEG0), ("Math.round(-0.6)", -1),
        ("Math.round(2.5)", 3), ("Math.ceil(-0.5)", NEG0), ("Math.floor(-0)", NEG0),
        ("Math.trunc(-0.5)", NEG0), ("Math.sign(-0)", NEG0), ("Math.sqrt(-0)", NEG0),
        ("Math.cbrt(-0)", NEG0), ("Math.abs(-0)", 0), ("Math.min(0, -0)", NEG0),
        ("Math.max(-0, 0)", 0), ("1/Math.round(-0.5)", -INF), ("1/Math.min(0, -0)", -INF),
        ("1/Math.max(-0, 0)", INF), ("1/(-5 % 5)", -INF), ("(-0) ** -1", -INF),
        ("Math.pow(-0, -2)", INF), ("(-0) ** 3", NEG0),
        # a negative base with a non-integer exponent is NaN, overflowing or not
        ("(-108350.78353251948) ** (923573.0667252266)", NAN),
        ("(-738955.0899427321) ** (54953.57142857143)", NAN), ("(-0.5) ** -2001.5", NAN),
        ("(-2) ** 0.5", NAN), ("(-10) ** 401", -INF), ("(-10) ** 400", INF),
        ("1 ** Infinity", NAN), ("(-1) ** -Infinity", NAN), ("(-Infinity) ** -1", NEG0),
        ("(-Infinity) ** 0.5", INF),
        ("-0 === 0", True), ("-0 < 0", False), ('-0 ? "t" : "f"', "f"),
        # formatting -0 gives "0"; toFixed writes a "-" only below zero
        ("String(-0)", "0"), ('-0 + ""', "0"), ('[-0, 1] + ""', "0,1"),
        ("(-0).toFixed(2)", "0.00"), ("(-0.001).toFixed(2)", "-0.00"),
        ("(-0.5).toFixed(0)", "-1"),
        ("JSON.stringify([-0, 1e16, 1e21, 1e-7, 0.1, 12345678901234567890])",
         "[0,10000000000000000,1e+21,1e-7,0.1,12345678901234567000]"),
        ("JSON.stringify({a: -0, b: [NaN, Infinity]})", '{"a":0,"b":[null,null]}'),
    ],
)
def test_javascript_number_edges(src: str, expected: Any) -> None:
    got = ev(src)
    if type(expected) is float and expected != expected:
        assert type(got) is float and got != got
    elif type(expected) in (int, float):
        assert type(got) in (int, float) and got == expected
        assert math.copysign(1.0, got) == math.copysign(1.0, expected)  # the sign of zero
    else:
        assert got == expected and type(got) is type(expected)


def test_negative_zero_is_stored_as_zero() -> None:
    # facts are JSON: JSON.stringify(-0) is "0", and the log's canonical JSON writes 0
    from cladelog.graph_engine import Engine

    eng = Engine({"childConcepts": {}}, seed={"freeNodes": [{"_id": "o", "z": -0.0}]})
    eng.mutate({"$$_id": "o", "m": ev("Math.round(-0.4)"), "l": [ev("-0")],
                "d": {"k": ev("0 * -1")}})
    got = eng.get("o")
    assert got is not None
    for value in (got["z"], got["m"], got["l"][0], got["d"]["k"]):
        assert value == 0 and type(value) is int
