"""Strict input: duplicate JSON members, contract thresholds, control characters in reviews.

Every refusal is one ``error: <path>: <problem>`` line on stderr, exit 2, and
nothing appended.
"""

from __future__ import annotations

import math
import re
from typing import Any

import pytest
from cladelog.core import InputError
from cladelog.lawv import LawVInputError, parse_contract
from cladelog.lawv.commands import MeasurementInput, add_review, run_check
from lawv_plugin_helpers import ONE_ANCHOR, contract, gain, one_anchor_measurement, plain


def _bad(lawv: Any, *args: str, pattern: str) -> None:
    before = len(lawv.events())
    result = lawv.cli(*args)
    assert result.exit_code == 2, result.output + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert re.search(pattern, lines[0]), lines[0]
    assert len(lawv.events()) == before


# -- duplicate members ----------------------------------------------------------------

_DUPLICATE_ID = ('{"id": "x", "id": "y", "version": "v", "anchors": [{"name": "solo", '
                 '"hash": "s0", "rating": 3000.0, "rating_uncertainty": 10.0, '
                 '"delta": -50.0, "uncertainty": 10.0}]}')


def test_measurement_file_with_a_duplicate_key_is_refused(lawv: Any) -> None:
    path = lawv.write(_DUPLICATE_ID, name="dup.json")
    _bad(lawv, "lawv", "measure", "add", path, pattern=r"dup\.json: .*duplicate.*'id'")
    assert lawv.state()["measurements"] == {}


def test_duplicate_key_deep_in_a_check_measurement_is_refused(lawv: Any) -> None:
    assert lawv.cli("lawv", "contract", "add", lawv.write(contract(ONE_ANCHOR))).exit_code == 0
    lawv.entries(gain(1, 20.0))
    old = lawv.write(one_anchor_measurement("m0", -50.0), name="m0.json")
    text = _DUPLICATE_ID.replace('"id": "x", "id": "y"', '"id": "m1"').replace(
        '"delta": -50.0', '"delta": -50.0, "delta": -30.0')
    new = lawv.write(text, name="m1.json")
    _bad(lawv, "lawv", "check", "--old", old, "--new", new,
         pattern=r"m1\.json: .*duplicate.*'delta'")
    assert lawv.state()["checks"] == []


def test_contract_file_with_a_duplicate_threshold_is_refused(lawv: Any) -> None:
    text = lawv.write(contract(ONE_ANCHOR), name="c.json")
    with open(text, encoding="utf-8") as fh:
        doc = fh.read()
    dup = doc.replace('"halt_below": 0.4', '"halt_below": 0.4, "halt_below": -5')
    assert dup != doc
    _bad(lawv, "lawv", "contract", "add", lawv.write(dup, name="cdup.json"),
         pattern=r"cdup\.json: .*duplicate.*'halt_below'")


# -- thresholds -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "field"),
    [({"halt_below": -5}, "halt_below"),            # would disable HALT
     ({"halt_below": -0.01}, "halt_below"),
     ({"halt_below": 40, "warn_below": 75}, "halt_below"),  # 40 for 0.40
     ({"warn_below": 75}, "warn_below"),
     ({"warn_below": 1.01}, "warn_below"),
     ({"halt_below": 1.5, "warn_below": 2.0}, "halt_below"),
     ({"halt_below": 0.8}, "halt_below")],          # above warn_below 0.75
)
def test_contract_thresholds_are_shares_of_the_claimed_gain(
        lawv: Any, changes: dict[str, Any], field: str) -> None:
    with pytest.raises(LawVInputError, match=rf"^contract\.{field}: must be"):
        parse_contract(contract(ONE_ANCHOR, **changes))
    path = lawv.write(contract(ONE_ANCHOR, **changes), name="c.json")
    _bad(lawv, "lawv", "contract", "add", path, pattern=rf"c\.json: contract\.{field}: must")
    # appended by hand: the payload is refused too
    with pytest.raises(InputError, match=rf"data\.{field}"):
        lawv.env.append("lawv.contract_registered", contract(ONE_ANCHOR, **changes),
                        stream="lawv.contracts")
    assert lawv.state()["contracts"] == {}


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_contract_thresholds_are_finite(value: float) -> None:
    for field in ("halt_below", "warn_below"):
        with pytest.raises(LawVInputError, match=rf"^contract\.{field}: must be"):
            parse_contract(contract(ONE_ANCHOR, **{field: value}))


def test_threshold_range_boundaries_are_accepted() -> None:
    parsed = parse_contract(contract(ONE_ANCHOR, halt_below=0, warn_below=1))
    assert (parsed.halt_below, parsed.warn_below) == (0.0, 1.0)
    parsed = parse_contract(contract(ONE_ANCHOR, halt_below=0.4, warn_below=0.4))
    assert parsed.halt_below == parsed.warn_below == 0.4


# -- reviews --------------------------------------------------------------------------


def _halted(lawv: Any) -> None:
    assert lawv.cli("lawv", "contract", "add", lawv.write(contract(ONE_ANCHOR))).exit_code == 0
    lawv.entries(gain(1, 12.0), plain(2, "special_path"), gain(3, 8.0))
    outcome = run_check(lawv.dep, old=MeasurementInput("m0", one_anchor_measurement("m0", -50.0)),
                        new=MeasurementInput("m1", one_anchor_measurement("m1", -43.0)))
    assert outcome.result.verdict == "HALT"  # 7 / 20 = 0.35


@pytest.mark.parametrize(
    ("reviewer", "code", "index"),
    [("alice\nmallory", "000A", 5), ("alice\r", "000D", 5), ("\x1b[31malice", "001B", 0),
     ("ali\x00ce", "0000", 3), ("alice\u2028bob", "2028", 5), ("\u202ealice", "202E", 0),
     ("alice\x85", "0085", 5)],
)
def test_reviewer_with_a_control_character_is_refused(
        lawv: Any, reviewer: str, code: str, index: int) -> None:
    _halted(lawv)
    pattern = (rf"^error: --reviewer: must not contain control characters "
               rf"\(U\+{code} at index {index}\)$")
    _bad(lawv, "lawv", "review", "--check", "check-1", "--decision", "resume",
         "--reviewer", reviewer, "--reason", "checked", pattern=pattern)
    with pytest.raises(LawVInputError, match=r"^--reviewer: must not contain control"):
        add_review(lawv.dep, check="check-1", decision="resume", reviewer=reviewer,
                   reason="checked")
    with pytest.raises(InputError, match=r"data\.reviewer: must not contain control"):
        lawv.env.append("lawv.review_recorded", {"check_id": "check-1", "decision": "resume",
                                                 "reviewer": reviewer, "reason": "checked"},
                        stream="lawv.reviews")
    assert lawv.state()["reviews"] == [] and lawv.state()["halt"]["blocked"] is True


def test_review_reason_may_span_lines_but_holds_no_other_control_character(
        lawv: Any) -> None:
    _halted(lawv)
    _bad(lawv, "lawv", "review", "--check", "check-1", "--decision", "resume",
         "--reviewer", "alice", "--reason", "ok\x1b[2J",
         pattern=r"^error: --reason: must not contain control characters \(U\+001B at index 2\)$")
    done = lawv.cli("lawv", "review", "--check", "check-1", "--decision", "resume",
                    "--reviewer", "Alice Émile-Ørsted", "--reason", "line one\n\tline two")
    assert done.exit_code == 0, done.output + done.stderr
    (review,) = lawv.state()["reviews"]
    assert review["reviewer"] == "Alice Émile-Ørsted"
    assert review["reason"] == "line one\n\tline two"
