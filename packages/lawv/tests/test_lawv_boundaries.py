"""The traffic light's boundaries: exact thresholds, S <= 0, negative ΔA."""

from __future__ import annotations

import pytest
from cladelog.lawv import classify, evaluate
from lawv_helpers import contract, gain, measurement, one_anchor_check


def test_exactly_0_40_does_not_halt() -> None:
    # +8 against +20: R = 8/20 = 0.40 -> WARNING (0.40 is not below 0.40)
    c, old, new = one_anchor_check(0.0, 8.0)
    result = evaluate(c, old, new, [gain(1, 20.0)])
    assert result.r == pytest.approx(0.4, abs=1e-15)
    assert result.verdict == "WARNING"


def test_exactly_0_75_continues() -> None:
    # +15 against +20: R = 15/20 = 0.75 -> CONTINUE (0.75 is not below 0.75)
    c, old, new = one_anchor_check(0.0, 15.0)
    result = evaluate(c, old, new, [gain(1, 20.0)])
    assert result.r == pytest.approx(0.75, abs=1e-15)
    assert result.verdict == "CONTINUE"


def test_0_40_reached_through_rounding_noise_does_not_halt() -> None:
    # S = 7.3 + 5.6 + 7.1 = 20 on paper; dA = 8 on paper (same uncertainties at both
    # endpoints, every delta raised by 8, so the weights are unchanged and A moves by 8).
    # In binary floating point both come out a hair off, and the computed R sits just
    # below 0.40 (asserted below). It must still be WARNING.
    old = measurement("old", [-35.3, 4.4, -140.1], [9.8, 15.0, 6.0])
    new = measurement("new", [-27.3, 12.4, -132.1], [9.8, 15.0, 6.0])
    entries = [gain(1, 7.3), gain(2, 5.6), gain(3, 7.1)]
    result = evaluate(contract(), old, new, entries)
    assert result.r is not None
    assert result.r < 0.4  # the raw quotient falls just below 0.40 ...
    assert result.r == pytest.approx(0.4, abs=1e-12)  # ... but within float noise
    assert result.verdict == "WARNING"


def test_0_75_reached_through_rounding_noise_continues() -> None:
    # dA = 15 on paper (every delta + 15, same uncertainties), S = 0.7 + 19.3 = 20
    old = measurement("old", [-35.3, 10.1, -140.7], [9.8, 15.0, 6.0])
    new = measurement("new", [-20.3, 25.1, -125.7], [9.8, 15.0, 6.0])
    result = evaluate(contract(), old, new, [gain(1, 0.7), gain(2, 19.3)])
    assert result.r == pytest.approx(0.75, abs=1e-12)
    assert result.verdict == "CONTINUE"


@pytest.mark.parametrize(
    ("r", "verdict"),
    [
        (0.39999999999997, "WARNING"),  # rounds to 0.400000000 at 9 decimals
        (0.3999999996, "WARNING"),  # rounds to 0.400000000 (documented precision)
        (0.3999999994, "HALT"),  # rounds to 0.399999999
        (0.399, "HALT"),
        (0.40, "WARNING"),
        (0.7499999999999, "CONTINUE"),
        (0.749999999, "WARNING"),
        (0.75, "CONTINUE"),
        (-3.0, "HALT"),
        (0.0, "HALT"),
        (5.0, "CONTINUE"),
    ],
)
def test_classify_rounds_to_nine_decimals(r: float, verdict: str) -> None:
    assert classify(r, 0.40, 0.75) == verdict


def test_equal_thresholds_leave_no_warning_band() -> None:
    assert classify(0.5, 0.5, 0.5) == "CONTINUE"
    assert classify(0.49, 0.5, 0.5) == "HALT"


def test_s_zero_is_a_gap() -> None:
    # +10 and -10 in the long stage, both passed: S = 0 -> no R
    c, old, new = one_anchor_check(0.0, 8.0)
    result = evaluate(c, old, new, [gain(1, 10.0), gain(2, -10.0)])
    assert result.s == 0.0
    assert result.status == "GAP"
    assert result.verdict == "GAP"
    assert result.r is None
    assert result.monte_carlo is None
    assert result.delta_a == pytest.approx(8.0)  # still recorded


def test_negative_s_is_a_gap() -> None:
    # S = 4 - 9 = -5 -> GAP, never a negative R
    c, old, new = one_anchor_check(0.0, 8.0)
    result = evaluate(c, old, new, [gain(1, 4.0), gain(2, -9.0)])
    assert result.s == -5.0
    assert result.status == "GAP"
    assert result.r is None


def test_negative_delta_a_halts() -> None:
    # dA = -6 against S = +20: R = -0.3 -> HALT
    c, old, new = one_anchor_check(10.0, 4.0)
    result = evaluate(c, old, new, [gain(1, 20.0)])
    assert result.delta_a == pytest.approx(-6.0)
    assert result.r == pytest.approx(-0.3)
    assert result.verdict == "HALT"


def test_zero_delta_a_halts() -> None:
    c, old, new = one_anchor_check(10.0, 10.0)
    result = evaluate(c, old, new, [gain(1, 20.0)])
    assert result.r == 0.0
    assert result.verdict == "HALT"


def test_short_stage_is_recorded_but_does_not_decide() -> None:
    # long: 8/20 = 0.4 -> WARNING decides; short: 8/40 = 0.2 -> HALT recorded only
    c, old, new = one_anchor_check(0.0, 8.0)
    result = evaluate(c, old, new, [gain(1, 20.0, 40.0)])
    assert result.verdict == "WARNING"
    assert result.verdict_short == "HALT"
    assert result.r_short == pytest.approx(0.2)


def test_short_sum_not_positive_gives_short_gap_only() -> None:
    # S = 20 > 0 but S_short = -3: the check has a verdict, the short stage has none
    c, old, new = one_anchor_check(0.0, 16.0)
    result = evaluate(c, old, new, [gain(1, 20.0, -3.0)])
    assert result.verdict == "CONTINUE"  # 16/20 = 0.8
    assert result.verdict_short == "GAP"
    assert result.r_short is None


def test_custom_thresholds_from_the_contract() -> None:
    # halt below 0.5: 9/20 = 0.45 halts under such a contract
    c, old, new = one_anchor_check(0.0, 9.0)
    c.update(halt_below=0.5, warn_below=0.9)
    assert evaluate(c, old, new, [gain(1, 20.0)]).verdict == "HALT"
