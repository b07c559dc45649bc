"""Hand-computed absolute values, ΔA, its uncertainty, the total bands, S and R."""

from __future__ import annotations

import math

import pytest
from cladelog.lawv import evaluate
from lawv_helpers import contract, gain, measurement, one_anchor_check, plain

# Two anchors, T = 0 so that every weight is a round number.
CLEAN_ANCHORS = [
    {"name": "P", "hash": "p", "rating": 3000.0, "rating_uncertainty": 4.0},
    {"name": "Q", "hash": "q", "rating": 2980.0, "rating_uncertainty": 8.0},
]


def test_clean_two_anchor_case_by_hand() -> None:
    # Weights with T = 0: w = 1/(h^2 + hL^2)
    #   P: h = 3, hL = 4 -> 9 + 16 = 25  -> w = 1/25
    #   Q: h = 6, hL = 8 -> 36 + 64 = 100 -> w = 1/100      (ratio 4 : 1)
    # old: P 3000 + 10 = 3010, Q 2980 + 10 = 2990 -> A = (4*3010 + 2990)/5 = 15030/5 = 3006
    # new: P 3000 + 20 = 3020, Q 2980 + 35 = 3015 -> A = (4*3020 + 3015)/5 = 15095/5 = 3019
    # sigma (both) = 1/sqrt(1/25 + 1/100) = 1/sqrt(0.05) = sqrt(20)
    # delta A = 13, uncertainty sqrt(20 + 20) = sqrt(40)
    # total band = sqrt(sigma^2 + 51^2) = sqrt(20 + 2601) = sqrt(2621)
    # S = 20 (one gain test), R = 13/20 = 0.65 -> WARNING
    c = contract(CLEAN_ANCHORS, T=0)
    old = measurement("o", [10.0, 10.0], [3.0, 6.0], CLEAN_ANCHORS)
    new = measurement("n", [20.0, 35.0], [3.0, 6.0], CLEAN_ANCHORS)
    result = evaluate(c, old, new, [gain(1, 20.0, 11.0)])
    assert result.a_old == pytest.approx(3006.0, abs=1e-9)
    assert result.a_new == pytest.approx(3019.0, abs=1e-9)
    assert result.sigma_old == pytest.approx(math.sqrt(20), abs=1e-12)
    assert result.sigma_new == pytest.approx(math.sqrt(20), abs=1e-12)
    assert result.total_band_old == pytest.approx(math.sqrt(2621), abs=1e-9)
    assert result.total_band_new == pytest.approx(math.sqrt(2621), abs=1e-9)
    assert result.delta_a == pytest.approx(13.0, abs=1e-9)
    assert result.delta_a_uncertainty == pytest.approx(math.sqrt(40), abs=1e-12)
    assert result.s == 20.0
    assert result.s_short == 11.0
    assert result.r == pytest.approx(0.65, abs=1e-12)
    assert result.verdict == "WARNING"
    # R_short = 13/11 = 1.18 -> CONTINUE (recorded, does not decide)
    assert result.r_short == pytest.approx(13 / 11, abs=1e-12)
    assert result.verdict_short == "CONTINUE"
    assert result.status == "ok"
    assert result.contract_version == 7


def test_three_anchors_with_t_36_9_by_hand() -> None:
    # T^2 = 36.9^2 = 1361.61
    # old (delta, h): alpha (-35.2, 9.8), beta (10, 15), gamma (-140, 6)
    #   weight variances: 9.8^2 + 12^2 + T^2 = 96.04 + 144 + 1361.61 = 1601.65
    #                     15^2 + 5^2 + T^2  = 225 + 25 + 1361.61    = 1611.61
    #                     6^2 + 20^2 + T^2  = 36 + 400 + 1361.61    = 1797.61
    #   values: 3000 - 35.2 = 2964.8, 2950 + 10 = 2960, 3100 - 140 = 2960
    #   A_old ~ 2961.66389
    #   sigma_old = 1/sqrt(1/240.04 + 1/250 + 1/436) ~ 9.77785
    # new: alpha (-20, 8), beta (25, 25), gamma (-131, 4)
    #   weight variances 64 + 144 + T^2 = 1569.61, 625 + 25 + T^2 = 2011.61,
    #                    16 + 400 + T^2 = 1777.61
    #   values 2980, 2975, 2969; A_new ~ 2974.88813
    #   sigma_new = 1/sqrt(1/208 + 1/650 + 1/416) ~ 10.69045
    a_old = (2964.8 / 1601.65 + 2960 / 1611.61 + 2960 / 1797.61) / (
        1 / 1601.65 + 1 / 1611.61 + 1 / 1797.61
    )
    a_new = (2980 / 1569.61 + 2975 / 2011.61 + 2969 / 1777.61) / (
        1 / 1569.61 + 1 / 2011.61 + 1 / 1777.61
    )
    sigma_old = (1 / 240.04 + 1 / 250 + 1 / 436) ** -0.5
    sigma_new = (1 / 208 + 1 / 650 + 1 / 416) ** -0.5
    assert a_old == pytest.approx(2961.66389, abs=1e-5)
    assert a_new == pytest.approx(2974.88813, abs=1e-5)
    # window: gain +12 (short 8), special path, gain +9 (short 6), epoch change
    #   S = 12 + 9 = 21, S_short = 8 + 6 = 14
    #   R = (A_new - A_old)/21 ~ 13.22424/21 ~ 0.62973 -> WARNING
    entries = [gain(10, 12.0, 8.0), plain(11, "special_path"), gain(12, 9.0, 6.0),
               plain(13, "epoch_change")]
    old = measurement("old", [-35.2, 10.0, -140.0], [9.8, 15.0, 6.0])
    new = measurement("new", [-20.0, 25.0, -131.0], [8.0, 25.0, 4.0])
    result = evaluate(contract(), old, new, entries, window=(10, 13))
    assert result.a_old == pytest.approx(a_old, abs=1e-9)
    assert result.a_new == pytest.approx(a_new, abs=1e-9)
    assert result.sigma_old == pytest.approx(sigma_old, abs=1e-9)
    assert result.sigma_new == pytest.approx(sigma_new, abs=1e-9)
    assert result.sigma_old == pytest.approx(9.77785, abs=1e-5)
    assert result.sigma_new == pytest.approx(10.69045, abs=1e-5)
    assert result.total_band_old == pytest.approx(math.sqrt(sigma_old**2 + 51**2), abs=1e-9)
    assert result.delta_a == pytest.approx(a_new - a_old, abs=1e-9)
    assert result.delta_a_uncertainty == pytest.approx(
        math.sqrt(sigma_old**2 + sigma_new**2), abs=1e-9
    )
    assert result.s == 21.0
    assert result.s_short == 14.0
    assert result.counted_seqs == (10, 12)
    assert result.r == pytest.approx((a_new - a_old) / 21, abs=1e-12)
    assert result.r == pytest.approx(0.62973, abs=1e-5)
    assert result.verdict == "WARNING"
    assert result.r_short == pytest.approx((a_new - a_old) / 14, abs=1e-12)
    assert result.verdict_short == "CONTINUE"
    # S - dA ~ 7.78 is within the band sqrt(sigma_old^2 + sigma_new^2) ~ 14.49
    assert result.claimed_excess == pytest.approx(21 - (a_new - a_old), abs=1e-9)
    assert result.overfitting_suspected is False


def test_anchor_order_in_measurement_does_not_matter() -> None:
    old = measurement("old", [-35.2, 10.0, -140.0], [9.8, 15.0, 6.0])
    new = measurement("new", [-20.0, 25.0, -131.0], [8.0, 25.0, 4.0])
    shuffled = {**new, "anchors": list(reversed(new["anchors"]))}
    first = evaluate(contract(), old, new, [gain(1, 20.0)])
    second = evaluate(contract(), old, shuffled, [gain(1, 20.0)])
    assert first.a_new == pytest.approx(second.a_new, abs=1e-9)
    assert first.verdict == second.verdict


@pytest.mark.parametrize(
    ("external", "expected_r", "verdict"),
    [(9.0, 0.45, "WARNING"), (7.0, 0.35, "HALT")],
)
def test_invented_example_of_the_seed(external: float, expected_r: float, verdict: str) -> None:
    # claimed +20 in total since the last check; against the anchors +9 -> 9/20 = 0.45
    # (WARNING), +7 -> 7/20 = 0.35 (HALT).
    c, old, new = one_anchor_check(-50.0, -50.0 + external)
    entries = [gain(1, 12.0), gain(2, 8.0)]
    result = evaluate(c, old, new, entries)
    assert result.s == 20.0
    assert result.delta_a == pytest.approx(external, abs=1e-9)
    assert result.r == pytest.approx(expected_r, abs=1e-12)
    assert result.verdict == verdict
    assert result.halts is (verdict == "HALT")


def test_zero_variance_anchor_dominates_the_mean() -> None:
    # T = 0 and an anchor with h = hL = 0 has infinite weight: A is its value alone,
    # sigma is 0.
    anchors = [
        {"name": "exact", "hash": "e", "rating": 3000.0, "rating_uncertainty": 0.0},
        {"name": "loose", "hash": "l", "rating": 2000.0, "rating_uncertainty": 30.0},
    ]
    c = contract(anchors, T=0)
    old = measurement("o", [5.0, 900.0], [0.0, 10.0], anchors)
    new = measurement("n", [15.0, 990.0], [0.0, 10.0], anchors)
    result = evaluate(c, old, new, [gain(1, 20.0)])
    assert result.a_old == 3005.0
    assert result.a_new == 3015.0
    assert result.sigma_old == 0.0
    assert result.total_band_old == 51.0  # sqrt(0 + 51^2)
    assert result.r == 0.5


def test_transfer_band_cancels_in_delta_a() -> None:
    old = measurement("old", [-35.2, 10.0, -140.0], [9.8, 15.0, 6.0])
    new = measurement("new", [-20.0, 25.0, -131.0], [8.0, 25.0, 4.0])
    narrow = evaluate(contract(transfer_band=0), old, new, [gain(1, 20.0)])
    wide = evaluate(contract(transfer_band=400), old, new, [gain(1, 20.0)])
    assert narrow.delta_a == wide.delta_a
    assert narrow.delta_a_uncertainty == wide.delta_a_uncertainty
    assert narrow.total_band_old == narrow.sigma_old
    assert wide.total_band_old == pytest.approx(math.hypot(wide.sigma_old or 0.0, 400))
