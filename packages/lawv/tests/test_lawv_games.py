"""Anchors measured by game counts: δ_i and h_i come from the logistic Elo of the games."""

from __future__ import annotations

import math

import pytest
from cladelog.lawv import LawVInputError, evaluate
from lawv_helpers import ONE_ANCHOR, contract, gain

Z = 1.959963984540054  # two-sided 95% normal quantile


def _elo(score: float) -> float:
    return -400.0 * math.log10(1.0 / score - 1.0)


def _by_hand(losses: int, draws: int, wins: int) -> tuple[float, float, float]:
    """Logistic Elo, its 95% half-width and normalized Elo, from the textbook formulas."""
    n = losses + draws + wins
    mean = (wins + 0.5 * draws) / n
    var = (losses * mean**2 + draws * (0.5 - mean) ** 2 + wins * (1.0 - mean) ** 2) / n
    se = math.sqrt(var / n)
    half_width = (_elo(mean + Z * se) - _elo(mean - Z * se)) / 2.0
    nelo = (800.0 / math.log(10)) * (mean - 0.5) / math.sqrt(var)
    return _elo(mean), half_width, nelo


def _games_measurement(ident: str, games: list[int]) -> dict[str, object]:
    return {"id": ident, "version": ident, "anchors": [{**ONE_ANCHOR[0], "games": games}]}


def test_games_give_delta_and_uncertainty() -> None:
    # old: 30 losses, 40 draws, 50 wins -> score 70/120 = 0.58333, elo ~ +58.5
    # new: 20 losses, 40 draws, 60 wins -> score 80/120 = 0.66667, elo ~ +120.4
    # one anchor (R = 3000, hL = 10): A = R + elo, sigma = sqrt(h^2 + 10^2)
    old_elo, old_hw, old_nelo = _by_hand(30, 40, 50)
    new_elo, new_hw, new_nelo = _by_hand(20, 40, 60)
    assert old_elo == pytest.approx(58.45, abs=0.01)
    assert new_elo == pytest.approx(120.41, abs=0.01)
    c = contract(ONE_ANCHOR)
    result = evaluate(
        c, _games_measurement("o", [30, 40, 50]), _games_measurement("n", [20, 40, 60]),
        [gain(1, 100.0)],
    )
    assert result.status == "ok"
    assert result.a_old == pytest.approx(3000 + old_elo, abs=1e-6)
    assert result.a_new == pytest.approx(3000 + new_elo, abs=1e-6)
    assert result.sigma_old == pytest.approx(math.sqrt(old_hw**2 + 100), abs=1e-6)
    assert result.sigma_new == pytest.approx(math.sqrt(new_hw**2 + 100), abs=1e-6)
    assert result.delta_a == pytest.approx(new_elo - old_elo, abs=1e-6)
    # R = 61.96/100 ~ 0.62 -> WARNING
    assert result.r == pytest.approx((new_elo - old_elo) / 100, abs=1e-8)
    assert result.verdict == "WARNING"
    # games also give normalized deltas; with every long stage carrying nelo,
    # R_nelo = (new_nelo - old_nelo)/S_nelo is recorded
    entries = [gain(1, 100.0, nelo=150.0)]
    result = evaluate(
        c, _games_measurement("o", [30, 40, 50]), _games_measurement("n", [20, 40, 60]), entries
    )
    assert result.delta_a_nelo == pytest.approx(new_nelo - old_nelo, abs=1e-6)
    assert result.r_nelo == pytest.approx((new_nelo - old_nelo) / 150, abs=1e-8)


def test_games_mixed_with_delta_anchors() -> None:
    anchors = [
        {"name": "g", "hash": "g", "rating": 3000.0, "rating_uncertainty": 10.0},
        {"name": "d", "hash": "d", "rating": 2900.0, "rating_uncertainty": 0.0},
    ]
    # anchor g by games (30, 40, 50), anchor d by delta +150 +- 20; T = 0
    #   variances: g: hw^2 + 100, d: 400 + 0
    elo_g, hw_g, _ = _by_hand(30, 40, 50)
    var_g, var_d = hw_g**2 + 100, 400.0
    expected = ((3000 + elo_g) / var_g + 3050 / var_d) / (1 / var_g + 1 / var_d)
    meas = {
        "id": "m",
        "version": "m",
        "anchors": [
            {**anchors[0], "games": [30, 40, 50]},
            {**anchors[1], "delta": 150.0, "uncertainty": 20.0},
        ],
    }
    result = evaluate(contract(anchors, T=0), meas, meas, [gain(1, 5.0)])
    assert result.a_old == pytest.approx(expected, abs=1e-6)
    assert result.delta_a == 0.0
    assert result.delta_a_nelo is None  # anchor d has no ndelta


def test_zero_games_is_defective() -> None:
    result = evaluate(
        contract(ONE_ANCHOR), _games_measurement("o", [0, 0, 0]),
        _games_measurement("n", [20, 40, 60]), [gain(1, 20.0)],
    )
    assert result.status == "DEFECTIVE"
    assert any(r.startswith("old.anchors[0].games:") for r in result.reasons)


def test_one_sided_games_stay_finite() -> None:
    # all wins: the Elo module regularises zero counts, so the estimate is finite
    result = evaluate(
        contract(ONE_ANCHOR), _games_measurement("o", [0, 0, 10]),
        _games_measurement("n", [0, 0, 12]), [gain(1, 20.0)],
    )
    assert result.status == "ok"
    assert result.a_old is not None and math.isfinite(result.a_old)


def test_games_and_delta_together_are_refused() -> None:
    meas = {"id": "m", "version": "m",
            "anchors": [{**ONE_ANCHOR[0], "games": [1, 2, 3], "delta": 4.0}]}
    with pytest.raises(LawVInputError, match=r"^old\.anchors\[0\]\.games: give either"):
        evaluate(contract(ONE_ANCHOR), meas, meas, [])


@pytest.mark.parametrize(
    ("games", "path"),
    [
        ([1, 2], r"old\.anchors\[0\]\.games: must be \[losses, draws, wins\]"),
        ([1, 2, -3], r"old\.anchors\[0\]\.games\[2\]: must be an integer"),
        ([1, 2.5, 3], r"old\.anchors\[0\]\.games\[1\]: must be an integer"),
        ([True, 2, 3], r"old\.anchors\[0\]\.games\[0\]: must be an integer"),
        ("1,2,3", r"old\.anchors\[0\]\.games: must be an array"),
    ],
)
def test_bad_games_are_refused(games: object, path: str) -> None:
    meas = {"id": "m", "version": "m", "anchors": [{**ONE_ANCHOR[0], "games": games}]}
    with pytest.raises(LawVInputError, match="^" + path):
        evaluate(contract(ONE_ANCHOR), meas, None, [])
