"""Tests for cladelog.core.elo.

Expected values come from three sources, never from the code under test:

* hand-worked arithmetic from the definitions (shown in comments);
* small independent re-derivations of fishtest's definitions written below
  (``_ref_*``): the maximum-likelihood problems are solved here by different
  algorithms (a primal search over the draw rate, golden-section search on the
  concave dual), not by the module's bisection on the secular equation;
* a few reference numbers produced by running fishtest's own
  ``server/fishtest/stats`` functions (LLRcalc.LLR_logistic, LLR_normalized,
  LLR_alt2, stat_util.get_elo, and the normalized-Elo formulas of its raw
  statistics page) with scipy; these are the specification's own outputs.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from statistics import NormalDist

import attrs
import pytest
from cladelog.core import elo as E
from cladelog.core.elo import (
    EloInputError,
    LogisticElo,
    NormalizedElo,
    elo_to_score,
    llr_brownian,
    llr_logistic,
    llr_normalized,
    logistic_elo,
    normalized_elo,
    score_to_elo,
    sprt_bounds,
    sprt_status,
)
from hypothesis import given, settings
from hypothesis import strategies as st

PHI = NormalDist()
Z95 = PHI.inv_cdf(0.975)  # 1.959963984540054
NELO_PER_T = 800 / math.log(10)  # 347.43558552260146


def close(actual: float, expected: float, tol: float = 1e-6) -> bool:
    """Agreement to ``tol``, absolute or relative, whichever is looser."""
    return abs(actual - expected) <= tol * max(1.0, abs(expected))


# ------------------------------------------------------------ independent references


def _ref_pdf(counts: Sequence[int]) -> tuple[float, list[float], list[float]]:
    """Regularised (zero -> 0.001) sample size, score values and frequencies."""
    reg = [c if c else 0.001 for c in counts]
    n = sum(reg)
    k = len(counts)
    return n, [i / (k - 1) for i in range(k)], [r / n for r in reg]


def _ref_logistic(elo: float) -> float:
    return 1 / (1 + 10 ** (-elo / 400))


def _ref_elo(score: float) -> float:
    score = min(max(score, 0.001), 0.999)
    return -400 * math.log10(1 / score - 1)


def _golden_max(h: Callable[[float], float], lo: float, hi: float) -> float:
    """Maximum value of a unimodal ``h`` on (lo, hi), by golden-section search."""
    ratio = (math.sqrt(5) - 1) / 2
    a, b = lo, hi
    c, d = b - ratio * (b - a), a + ratio * (b - a)
    hc, hd = h(c), h(d)
    for _ in range(300):
        if hc >= hd:
            b, d, hd = d, c, hc
            c = b - ratio * (b - a)
            hc = h(c)
        else:
            a, c, hc = c, d, hd
            d = a + ratio * (b - a)
            hd = h(d)
    return max(hc, hd)


def _ref_loglik_dual(values: list[float], probs: list[float], s: float) -> float:
    """max sum p log q over q with mean s, through the concave dual.

    With b_i = a_i - s the maximum equals sum p log p - max_v sum p log(1 + v b_i),
    v ranging where every 1 + v b_i > 0.
    """
    b = [a - s for a in values]

    def dual(v: float) -> float:
        terms = [1 + v * bi for bi in b]
        if min(terms) <= 0:
            return -math.inf
        return sum(p * math.log(t) for p, t in zip(probs, terms, strict=True))

    best = _golden_max(dual, -1 / max(b), -1 / min(b))
    return sum(p * math.log(p) for p in probs) - best


def _ref_loglik_primal_trinomial(probs: list[float], s: float) -> float:
    """max over draw rate d of pL log(1-s-d/2) + pD log d + pW log(s-d/2).

    The log-likelihood is concave in d, so bisection on the sign of its derivative
    finds the maximiser.
    """
    pl, pd, pw = probs
    lo, hi = 0.0, 2 * min(s, 1 - s)
    for _ in range(200):
        d = (lo + hi) / 2
        slope = -pl / (2 * (1 - s - d / 2)) + pd / d - pw / (2 * (s - d / 2))
        if slope > 0:
            lo = d
        else:
            hi = d
    d = (lo + hi) / 2
    q = (1 - s - d / 2, d, s - d / 2)
    return sum(p * math.log(x) for p, x in zip(probs, q, strict=True))


def _ref_llr_logistic(counts: Sequence[int], elo0: float, elo1: float) -> float:
    n, values, probs = _ref_pdf(counts)
    s0, s1 = _ref_logistic(elo0), _ref_logistic(elo1)
    return n * (_ref_loglik_dual(values, probs, s1) - _ref_loglik_dual(values, probs, s0))


def _ref_llr_logistic_primal(counts: Sequence[int], elo0: float, elo1: float) -> float:
    n, _, probs = _ref_pdf(counts)
    s0, s1 = _ref_logistic(elo0), _ref_logistic(elo1)
    return n * (_ref_loglik_primal_trinomial(probs, s1) - _ref_loglik_primal_trinomial(probs, s0))


def _ref_loglik_t_trinomial(probs: list[float], t: float) -> float:
    """max sum p log q over trinomial q with (mean - 1/2) / sd = t, by brute force.

    For a trinomial on {0, 1/2, 1} with mean m and variance v:
    qD = 4 (m (1 - m) - v), qW = m - qD / 2, qL = 1 - m - qD / 2.
    t != 0 fixes v = ((m - 1/2) / t)^2, leaving a search over m; t == 0 fixes
    m = 1/2, leaving a search over v. A grid locates the best region, then a
    golden-section search refines it.
    """

    def loglik(q: tuple[float, float, float]) -> float:
        if min(q) <= 0:
            return -math.inf
        return sum(p * math.log(x) for p, x in zip(probs, q, strict=True))

    if t == 0:

        def h(x: float) -> float:  # x is the variance
            return loglik((2 * x, 1 - 4 * x, 2 * x))

        lo, hi = 0.0, 0.25
    else:

        def h(x: float) -> float:  # x is the mean
            qd = 4 * (x * (1 - x) - ((x - 0.5) / t) ** 2)
            return loglik((1 - x - qd / 2, qd, x - qd / 2))

        lo, hi = (0.5, 1.0) if t > 0 else (0.0, 0.5)
    steps = 20000
    grid = [lo + (hi - lo) * i / steps for i in range(1, steps)]
    index = max(range(len(grid)), key=lambda i: h(grid[i]))
    left = grid[index - 1] if index > 0 else lo
    right = grid[index + 1] if index + 1 < len(grid) else hi
    return _golden_max(h, left, right)


def _ref_llr_normalized_trinomial(counts: Sequence[int], nelo0: float, nelo1: float) -> float:
    n, _, probs = _ref_pdf(counts)
    t0, t1 = nelo0 / NELO_PER_T, nelo1 / NELO_PER_T
    return n * (_ref_loglik_t_trinomial(probs, t1) - _ref_loglik_t_trinomial(probs, t0))


# ------------------------------------------------------------------ hand-worked examples


def test_trinomial_logistic_elo_by_hand() -> None:
    r = logistic_elo([10, 20, 30])
    # 60 games: 30 wins, 20 draws, 10 losses
    score = (20 * 0.5 + 30) / 60  # 2/3
    elo = -400 * math.log10(1 / score - 1)  # 400 log10(2) = 120.412
    # variance of one game's score around the mean
    var = (10 * (0 - score) ** 2 + 20 * (0.5 - score) ** 2 + 30 * (1 - score) ** 2) / 60
    assert var == pytest.approx(75 / 9 / 60)  # (40/9 + 5/9 + 30/9) / 60
    se = math.sqrt(var / 60)
    hi = -400 * math.log10(1 / (score + Z95 * se) - 1)
    lo = -400 * math.log10(1 / (score - Z95 * se) - 1)
    half = (hi - lo) / 2
    assert r.model == "trinomial"
    assert r.games == 60
    assert r.score == pytest.approx(score, abs=1e-12)
    assert r.elo == pytest.approx(elo, abs=1e-9)
    assert r.elo == pytest.approx(120.41199826559248, abs=1e-9)
    assert r.half_width == pytest.approx(half, abs=1e-9)
    assert r.elo_lower == pytest.approx(elo - half, abs=1e-9)
    assert r.elo_upper == pytest.approx(elo + half, abs=1e-9)
    assert r.half_width == pytest.approx((r.elo_upper - r.elo_lower) / 2, abs=1e-12)
    assert r.los == pytest.approx(PHI.cdf((score - 0.5) / se), abs=1e-12)
    assert r.interval_method == E.INTERVAL_METHOD


def test_trinomial_normalized_elo_by_hand() -> None:
    r = normalized_elo([10, 20, 30])
    score = 2 / 3
    probs = [10 / 60, 20 / 60, 30 / 60]
    values = [0, 0.5, 1]
    var = sum(p * (a - score) ** 2 for p, a in zip(probs, values, strict=True))
    m3 = sum(p * (a - score) ** 3 for p, a in zip(probs, values, strict=True))
    m4 = sum(p * (a - score) ** 4 for p, a in zip(probs, values, strict=True))
    skew, exkurt = m3 / var**1.5, m4 / var**2 - 3
    t = (score - 0.5) / math.sqrt(var)  # (1/6) / sqrt(5/36) = 1/sqrt(5)
    assert t == pytest.approx(1 / math.sqrt(5))
    var_t = 1 - t * skew + t * t * (exkurt + 2) / 4
    half = NELO_PER_T * Z95 * math.sqrt(var_t / 60)
    assert r.model == "trinomial"
    assert r.nelo == pytest.approx(NELO_PER_T * t, abs=1e-9)
    assert r.half_width == pytest.approx(half, abs=1e-9)
    assert r.nelo_lower == pytest.approx(NELO_PER_T * t - half, abs=1e-9)
    assert r.nelo_upper == pytest.approx(NELO_PER_T * t + half, abs=1e-9)


def test_pentanomial_logistic_elo_by_hand() -> None:
    counts = [1, 4, 10, 15, 10]  # 40 pairs = 80 games
    r = logistic_elo(counts)
    # a pair's mean score is 0, 1/4, 1/2, 3/4 or 1
    score = (0 * 1 + 0.25 * 4 + 0.5 * 10 + 0.75 * 15 + 1 * 10) / 40  # 27.25 / 40
    var = sum(c * (i / 4 - score) ** 2 for i, c in enumerate(counts)) / 40
    se = math.sqrt(var / 40)  # standard error of the mean score over 40 pairs
    hi = -400 * math.log10(1 / (score + Z95 * se) - 1)
    lo = -400 * math.log10(1 / (score - Z95 * se) - 1)
    assert r.model == "pentanomial"
    assert r.games == 80
    assert r.score == pytest.approx(0.68125, abs=1e-12)
    assert r.elo == pytest.approx(-400 * math.log10(1 / score - 1), abs=1e-9)
    assert r.half_width == pytest.approx((hi - lo) / 2, abs=1e-9)
    assert r.los == pytest.approx(PHI.cdf((score - 0.5) / se), abs=1e-12)


def test_pentanomial_normalized_elo_uses_per_game_sigma() -> None:
    counts = [1, 4, 10, 15, 10]
    r = normalized_elo(counts)
    score = 0.68125
    var_pair = sum(c * (i / 4 - score) ** 2 for i, c in enumerate(counts)) / 40
    # a pair is two games, so the per-game variance is twice the pair-mean variance
    nelo = NELO_PER_T * (score - 0.5) / math.sqrt(2 * var_pair)
    assert r.model == "pentanomial"
    assert r.nelo == pytest.approx(nelo, abs=1e-9)


def test_balanced_results_are_even() -> None:
    for counts in ([7, 3, 7], [5, 10, 20, 10, 5]):
        r = logistic_elo(counts)
        assert r.score == pytest.approx(0.5, abs=1e-15)
        assert r.elo == pytest.approx(0.0, abs=1e-9)
        assert r.los == pytest.approx(0.5, abs=1e-12)
        assert normalized_elo(counts).nelo == pytest.approx(0.0, abs=1e-9)


def test_confidence_level_changes_only_the_interval() -> None:
    wide, narrow = logistic_elo([10, 20, 30], 0.99), logistic_elo([10, 20, 30], 0.5)
    assert wide.elo == narrow.elo
    assert wide.half_width > narrow.half_width > 0
    score, se = 2 / 3, math.sqrt(75 / 9 / 60 / 60)
    z50 = PHI.inv_cdf(0.75)  # 0.6745
    half = (_ref_elo(score + z50 * se) - _ref_elo(score - z50 * se)) / 2
    assert narrow.half_width == pytest.approx(half, abs=1e-9)
    n_wide, n_narrow = normalized_elo([10, 20, 30], 0.99), normalized_elo([10, 20, 30], 0.5)
    assert n_wide.half_width / n_narrow.half_width == pytest.approx(PHI.inv_cdf(0.995) / z50)


# ------------------------------------------------------------------ regularisation


def test_zero_counts_are_regularised_like_fishtest() -> None:
    # [0, 0, 1] becomes [0.001, 0.001, 1]: mean = (0.0005 + 1) / 1.002
    score = 1.0005 / 1.002
    r = logistic_elo([0, 0, 1])
    assert r.games == 1
    assert r.score == pytest.approx(score, abs=1e-15)
    assert r.elo == pytest.approx(-400 * math.log10(1 / score - 1), abs=1e-9)
    var = (0.001 * score**2 + 0.001 * (0.5 - score) ** 2 + (1 - score) ** 2) / 1.002
    se = math.sqrt(var / 1.002)
    # the upper end of the score interval exceeds 0.999 and is clamped there
    assert score + Z95 * se > 0.999
    half = (_ref_elo(0.999) - _ref_elo(score - Z95 * se)) / 2
    assert r.half_width == pytest.approx(half, abs=1e-9)


def test_score_to_elo_clamps_and_inverts() -> None:
    assert score_to_elo(0.5) == 0.0
    assert score_to_elo(0.75) == pytest.approx(400 * math.log10(3))
    assert score_to_elo(1.0) == pytest.approx(400 * math.log10(999))  # clamped at 0.999
    assert score_to_elo(0.0) == pytest.approx(-400 * math.log10(999))
    assert elo_to_score(0) == 0.5
    assert elo_to_score(400 * math.log10(3)) == pytest.approx(0.75)
    assert elo_to_score(-400) == pytest.approx(1 / 11)
    assert elo_to_score(1e6) == 1.0
    assert elo_to_score(-1e6) == 0.0
    for elo in (-1000.0, -35.5, 0.0, 12.25, 1100.0):
        assert score_to_elo(elo_to_score(elo)) == pytest.approx(elo, abs=1e-9)


# ----------------------------------------------------------------- fishtest reference


FISHTEST_PENTANOMIAL = [10789, 19328, 33806, 19402, 10543]
FISHTEST_TRINOMIAL = [65804, 56553, 65388]  # losses, draws, wins of the same run


def test_llr_matches_fishtest_reference_outputs() -> None:
    assert close(llr_logistic(FISHTEST_PENTANOMIAL, -3, 1), 2.1310678117940807)
    assert close(llr_logistic(FISHTEST_TRINOMIAL, -3, 1), 2.0490426179674808)
    assert close(llr_logistic([0, 3, 7], 0, 5), 0.14284899074411747)
    assert close(llr_brownian(FISHTEST_PENTANOMIAL, -3, 1), 2.1312448707048293)
    assert close(llr_normalized([39, 2226, 31451, 2412, 40], 0.764, 3.439), 2.162940869584568)
    assert close(llr_normalized(FISHTEST_PENTANOMIAL, 0, 2), -6.070429067588585)


def test_elo_matches_fishtest_reference_outputs() -> None:
    for counts, (elo, half, los) in [
        (FISHTEST_PENTANOMIAL, (-0.7735773359165423, 1.2775798957280218, 0.1176588580327751)),
        (FISHTEST_TRINOMIAL, (-0.7698390908603271, 1.313742840854298, 0.12537555271611706)),
        ([10, 20, 30], (120.41199826559247, 75.25988693832561, 0.9997339972474304)),
        ([0, 0, 1], (1129.6503335665957, 376.02256754720986, 1.0)),
    ]:
        r = logistic_elo(counts)
        assert close(r.elo, elo) and close(r.half_width, half) and close(r.los, los)
    for counts, (nelo, lower, upper) in [
        (FISHTEST_PENTANOMIAL, (-0.9516290044726475, -2.5232516812470083, 0.6199936723017131)),
        ([39, 2226, 31451, 2412, 40], (3.450799606946096, 0.919560003682218, 5.982039210209973)),
        ([10, 20, 30], (155.37791740619568, 53.91697858553147, 256.8388562268599)),
    ]:
        n = normalized_elo(counts)
        assert close(n.nelo, nelo) and close(n.nelo_lower, lower) and close(n.nelo_upper, upper)


# ----------------------------------------------------------- independent cross-checks


LLR_CASES = [
    ([10, 20, 30], 0.0, 5.0),
    ([10, 20, 30], -10.0, 60.0),
    ([120, 310, 140], -3.0, 1.0),
    ([0, 20, 30], 0.0, 5.0),  # a zero cell: regularised to 0.001
    ([3, 0, 1], -50.0, 50.0),
    ([1, 4, 10, 15, 10], 0.0, 5.0),
    ([40, 210, 500, 230, 45], -2.0, 3.0),
    ([0, 4, 10, 0, 10], 10.0, 40.0),
]


@pytest.mark.parametrize(("counts", "elo0", "elo1"), LLR_CASES)
def test_llr_logistic_matches_dual_search(counts: list[int], elo0: float, elo1: float) -> None:
    assert close(llr_logistic(counts, elo0, elo1), _ref_llr_logistic(counts, elo0, elo1))


@pytest.mark.parametrize(
    ("counts", "elo0", "elo1"), [case for case in LLR_CASES if len(case[0]) == 3]
)
def test_llr_logistic_matches_primal_search(counts: list[int], elo0: float, elo1: float) -> None:
    expected = _ref_llr_logistic_primal(counts, elo0, elo1)
    assert close(llr_logistic(counts, elo0, elo1), expected)


@pytest.mark.parametrize(("counts", "elo0", "elo1"), LLR_CASES)
def test_llr_brownian_formula(counts: list[int], elo0: float, elo1: float) -> None:
    n, values, probs = _ref_pdf(counts)
    mean = sum(p * a for p, a in zip(probs, values, strict=True))
    var = sum(p * (a - mean) ** 2 for p, a in zip(probs, values, strict=True))
    s0, s1 = _ref_logistic(elo0), _ref_logistic(elo1)
    expected = n * (s1 - s0) * (2 * mean - s0 - s1) / (2 * var)
    assert close(llr_brownian(counts, elo0, elo1), expected)


def test_brownian_is_close_to_exact_near_the_bounds() -> None:
    exact = llr_logistic(FISHTEST_PENTANOMIAL, -3, 1)
    assert abs(llr_brownian(FISHTEST_PENTANOMIAL, -3, 1) - exact) < 0.01


@pytest.mark.parametrize(
    ("counts", "nelo0", "nelo1"),
    [
        ([10, 20, 30], 0.0, 5.0),
        ([10, 20, 30], 100.0, 200.0),
        ([120, 310, 140], -30.0, 10.0),
        ([0, 20, 30], 0.0, 50.0),
        ([50, 10, 40], -20.0, 0.0),
    ],
)
def test_llr_normalized_matches_brute_force(counts: list[int], nelo0: float, nelo1: float) -> None:
    expected = _ref_llr_normalized_trinomial(counts, nelo0, nelo1)
    assert close(llr_normalized(counts, nelo0, nelo1), expected)


# ---------------------------------------------------------------------- symmetries


SYMMETRY_CASES = [[10, 20, 30], [3, 0, 1], [0, 0, 9], [1, 4, 10, 15, 10], [0, 2, 0, 7, 1]]


@pytest.mark.parametrize("counts", SYMMETRY_CASES)
def test_swapping_wins_and_losses_mirrors_everything(counts: list[int]) -> None:
    mirrored = list(reversed(counts))
    a, b = logistic_elo(counts), logistic_elo(mirrored)
    assert b.elo == pytest.approx(-a.elo, abs=1e-9)
    assert b.score == pytest.approx(1 - a.score, abs=1e-12)
    assert b.half_width == pytest.approx(a.half_width, abs=1e-9)
    assert b.elo_lower == pytest.approx(-a.elo_upper, abs=1e-9)
    assert b.los == pytest.approx(1 - a.los, abs=1e-12)
    na, nb = normalized_elo(counts), normalized_elo(mirrored)
    assert nb.nelo == pytest.approx(-na.nelo, abs=1e-9 * max(1, abs(na.nelo)))
    assert nb.half_width == pytest.approx(na.half_width, rel=1e-9)
    for llr in (llr_logistic, llr_brownian, llr_normalized):
        assert close(llr(mirrored, -5.0, 0.0), llr(counts, 5.0, 0.0), 1e-9)


@pytest.mark.parametrize("counts", SYMMETRY_CASES)
def test_swapping_the_hypotheses_negates_the_llr(counts: list[int]) -> None:
    for llr in (llr_logistic, llr_brownian, llr_normalized):
        assert close(llr(counts, 5.0, -2.0), -llr(counts, -2.0, 5.0), 1e-9)
        assert llr(counts, 3.0, 3.0) == pytest.approx(0.0, abs=1e-9)


def test_more_wins_push_the_llr_towards_h1() -> None:
    for llr in (llr_logistic, llr_brownian, llr_normalized):
        values = [llr([100, 100, 100 + extra], 0.0, 5.0) for extra in range(0, 60, 10)]
        assert values == sorted(values)
        assert values[0] < 0 < values[-1]
        # turning a loss into a win raises it too (pentanomial)
        assert llr([20, 40, 80, 40, 20], 0.0, 5.0) < llr([19, 40, 80, 40, 21], 0.0, 5.0)


def test_los_grows_with_wins() -> None:
    los = [logistic_elo([50, 100, 50 + extra]).los for extra in range(0, 30, 5)]
    assert los == sorted(los)
    assert los[0] == pytest.approx(0.5, abs=1e-12)


# --------------------------------------------------------------------------- SPRT


def test_sprt_bounds() -> None:
    lower, upper = sprt_bounds(0.05, 0.05)
    assert lower == pytest.approx(-math.log(19), abs=1e-12)  # ln(0.05 / 0.95)
    assert upper == pytest.approx(math.log(19), abs=1e-12)  # ln(0.95 / 0.05)
    lower, upper = sprt_bounds(0.05, 0.1)
    assert lower == pytest.approx(math.log(0.1 / 0.95), abs=1e-12)
    assert upper == pytest.approx(math.log(0.9 / 0.05), abs=1e-12)


def test_sprt_status() -> None:
    b = math.log(19)
    assert sprt_status(b, 0.05, 0.05) == "H1"
    assert sprt_status(b + 1, 0.05, 0.05) == "H1"
    assert sprt_status(-b, 0.05, 0.05) == "H0"
    assert sprt_status(-b - 1, 0.05, 0.05) == "H0"
    assert sprt_status(0, 0.05, 0.05) == "continue"
    assert sprt_status(b - 1e-9, 0.05, 0.05) == "continue"
    assert sprt_status(llr_logistic(FISHTEST_PENTANOMIAL, -3, 1), 0.05, 0.05) == "continue"


# ------------------------------------------------------------------- degenerate input


DEGENERATE = [
    [0, 0, 1],
    [1, 0, 0],
    [0, 1, 0],
    [0, 0, 1000000],
    [1000000, 0, 0],
    [0, 1000000, 0],
    [0, 0, 0, 0, 1],
    [1, 0, 0, 0, 0],
    [0, 0, 1, 0, 0],
    [0, 0, 0, 0, 2**53 - 1],
    [2**53 - 1, 0, 0, 0, 1],
]


def _all_outputs(counts: list[int], bound0: float, bound1: float, level: float) -> list[float]:
    r = logistic_elo(counts, level)
    n = normalized_elo(counts, level)
    return [
        r.score,
        r.elo,
        r.elo_lower,
        r.elo_upper,
        r.half_width,
        r.los,
        n.nelo,
        n.nelo_lower,
        n.nelo_upper,
        n.half_width,
        llr_logistic(counts, bound0, bound1),
        llr_brownian(counts, bound0, bound1),
        llr_normalized(counts, bound0, bound1),
    ]


@pytest.mark.parametrize("counts", DEGENERATE)
def test_degenerate_results_are_finite(counts: list[int]) -> None:
    for bounds in ((0.0, 5.0), (-3.0, 1.0), (-2000.0, 2000.0), (400.0, 600.0)):
        outputs = _all_outputs(counts, *bounds, 0.95)
        assert all(math.isfinite(x) for x in outputs), (counts, bounds, outputs)
    r = logistic_elo(counts)
    # elo lies within +-1199.83 (the score clamp) and so does the half width
    assert -1200 < r.elo < 1200 and 0 <= r.half_width < 1200
    assert r.elo_lower <= r.elo <= r.elo_upper
    assert 0 <= r.los <= 1
    assert r.games == sum(counts) * (1 if len(counts) == 3 else 2)


def test_all_wins_favour_h1_and_all_losses_h0() -> None:
    assert llr_logistic([0, 0, 50], 0, 5) > 0 > llr_logistic([50, 0, 0], 0, 5)
    assert llr_normalized([0, 0, 0, 0, 50], 0, 5) > 0 > llr_normalized([50, 0, 0, 0, 0], 0, 5)


def test_results_are_frozen_attrs_classes() -> None:
    r = logistic_elo([10, 20, 30])
    n = normalized_elo([10, 20, 30])
    assert isinstance(r, LogisticElo) and isinstance(n, NormalizedElo)
    assert attrs.has(LogisticElo) and attrs.has(NormalizedElo)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        r.elo = 0.0  # type: ignore[misc]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        n.nelo = 0.0  # type: ignore[misc]


# ----------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("counts", "message"),
    [
        ({"wins": 1}, "counts: must be a list or tuple of 3 or 5 counts, got dict"),
        ("123", "counts: must be a list or tuple of 3 or 5 counts, got str"),
        (None, "counts: must be a list or tuple of 3 or 5 counts, got NoneType"),
        ([1, 2], "counts: must hold 3 or 5 counts, got 2"),
        ([1, 2, 3, 4], "counts: must hold 3 or 5 counts, got 4"),
        ([], "counts: must hold 3 or 5 counts, got 0"),
        ([1, 2, -1], "counts[2]: must be a non-negative integer, got -1"),
        ([1, True, 3], "counts[1]: must be a non-negative integer, got True"),
        ([1.0, 2, 3], "counts[0]: must be a non-negative integer, got 1.0"),
        ([1, 2, "3"], "counts[2]: must be a non-negative integer, got str"),
        ([1, 2, None, 4, 5], "counts[2]: must be a non-negative integer, got NoneType"),
        ([0, 0, 2**53], "counts[2]: must be at most 2**53 - 1, got 9007199254740992"),
        ([10**1000, 0, 0], "counts[0]: must be at most 2**53 - 1, got an integer of 3322 bits"),
        (
            [0, -(10**1000), 0],
            "counts[1]: must be a non-negative integer, got a negative integer of 3322 bits",
        ),
        ([0, 0, 0], "counts: total number of games must be positive, got 0"),
        ((0, 0, 0, 0, 0), "counts: total number of games must be positive, got 0"),
    ],
)
def test_bad_counts(counts: object, message: str) -> None:
    calls: list[Callable[[], object]] = [
        lambda: logistic_elo(counts),  # type: ignore[arg-type]
        lambda: normalized_elo(counts),  # type: ignore[arg-type]
        lambda: llr_logistic(counts, 0, 5),  # type: ignore[arg-type]
        lambda: llr_normalized(counts, 0, 5),  # type: ignore[arg-type]
        lambda: llr_brownian(counts, 0, 5),  # type: ignore[arg-type]
    ]
    for call in calls:
        with pytest.raises(EloInputError) as caught:
            call()
        assert str(caught.value) == message


def test_error_is_a_value_error() -> None:
    assert issubclass(EloInputError, ValueError)


@pytest.mark.parametrize(
    ("level", "message"),
    [
        (0, "confidence: must lie in (0, 1), got 0"),
        (1, "confidence: must lie in (0, 1), got 1"),
        (1.5, "confidence: must lie in (0, 1), got 1.5"),
        (-0.1, "confidence: must lie in (0, 1), got -0.1"),
        (math.nan, "confidence: must be finite, got nan"),
        (True, "confidence: must be a real number, got bool"),
        ("0.95", "confidence: must be a real number, got str"),
    ],
)
def test_bad_confidence(level: object, message: str) -> None:
    for function in (logistic_elo, normalized_elo):
        with pytest.raises(EloInputError) as caught:
            function([1, 2, 3], level)  # type: ignore[arg-type]
        assert str(caught.value) == message


@pytest.mark.parametrize(
    ("elo0", "elo1", "field", "problem"),
    [
        (math.inf, 5, "0", "must be finite, got inf"),
        (0, -math.inf, "1", "must be finite, got -inf"),
        (0, math.nan, "1", "must be finite, got nan"),
        (0, 10**400, "1", "must be finite, got an integer of 1329 bits"),
        (0, -(10**1000), "1", "must be finite, got a negative integer of 3322 bits"),
        ("0", 5, "0", "must be a real number, got str"),
        (None, 5, "0", "must be a real number, got NoneType"),
        (False, 5, "0", "must be a real number, got bool"),
        (0, 2000.5, "1", "must lie in [-2000, 2000], got 2000.5"),
        (-3000, 5, "0", "must lie in [-2000, 2000], got -3000"),
    ],
)
def test_bad_bounds(elo0: object, elo1: object, field: str, problem: str) -> None:
    for function, name in ((llr_logistic, "elo"), (llr_brownian, "elo"), (llr_normalized, "nelo")):
        with pytest.raises(EloInputError) as caught:
            function([1, 2, 3], elo0, elo1)  # type: ignore[arg-type]
        assert str(caught.value) == f"{name}{field}: {problem}"


@pytest.mark.parametrize(
    ("alpha", "beta", "message"),
    [
        (0, 0.05, "alpha: must lie in (0, 1), got 0"),
        (1, 0.05, "alpha: must lie in (0, 1), got 1"),
        (0.05, 0, "beta: must lie in (0, 1), got 0"),
        (0.05, 1.2, "beta: must lie in (0, 1), got 1.2"),
        (0.05, math.nan, "beta: must be finite, got nan"),
        (None, 0.05, "alpha: must be a real number, got NoneType"),
        (0.6, 0.5, "alpha + beta: must be below 1, got 1.1"),
    ],
)
def test_bad_sprt_parameters(alpha: object, beta: object, message: str) -> None:
    with pytest.raises(EloInputError) as caught:
        sprt_bounds(alpha, beta)  # type: ignore[arg-type]
    assert str(caught.value) == message
    with pytest.raises(EloInputError) as caught:
        sprt_status(0.0, alpha, beta)  # type: ignore[arg-type]
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("llr", "message"),
    [
        (math.nan, "llr: must be finite, got nan"),
        (math.inf, "llr: must be finite, got inf"),
        ("1", "llr: must be a real number, got str"),
    ],
)
def test_bad_llr(llr: object, message: str) -> None:
    with pytest.raises(EloInputError) as caught:
        sprt_status(llr, 0.05, 0.05)  # type: ignore[arg-type]
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: score_to_elo(1.5), "score: must lie in [0, 1], got 1.5"),
        (lambda: score_to_elo(-0.1), "score: must lie in [0, 1], got -0.1"),
        (lambda: score_to_elo(math.nan), "score: must be finite, got nan"),
        (lambda: elo_to_score(math.inf), "elo: must be finite, got inf"),
        (
            lambda: elo_to_score("1"),  # type: ignore[arg-type]
            "elo: must be a real number, got str",
        ),
    ],
)
def test_bad_conversions(call: Callable[[], object], message: str) -> None:
    with pytest.raises(EloInputError) as caught:
        call()
    assert str(caught.value) == message


# ------------------------------------------------------------------------- properties


counts_strategy = st.one_of(
    st.lists(st.integers(0, 2**53 - 1), min_size=3, max_size=3),
    st.lists(st.integers(0, 2**53 - 1), min_size=5, max_size=5),
    st.lists(st.integers(0, 50), min_size=3, max_size=3),
    st.lists(st.integers(0, 50), min_size=5, max_size=5),
).filter(lambda c: sum(c) > 0)
bound_strategy = st.one_of(
    st.floats(-E.MAX_BOUND, E.MAX_BOUND, allow_nan=False),
    st.floats(-20, 20, allow_nan=False),
)
level_strategy = st.floats(0, 1, exclude_min=True, exclude_max=True)


@settings(max_examples=150, deadline=None)
@given(counts=counts_strategy, bound0=bound_strategy, bound1=bound_strategy, level=level_strategy)
def test_every_output_is_finite(
    counts: list[int], bound0: float, bound1: float, level: float
) -> None:
    outputs = _all_outputs(counts, bound0, bound1, level)
    assert all(math.isfinite(x) for x in outputs), outputs
    r = logistic_elo(counts, level)
    assert r.elo_lower <= r.elo <= r.elo_upper
    assert 0 <= r.los <= 1 and 0 <= r.score <= 1


@settings(max_examples=60, deadline=None)
@given(counts=counts_strategy, bound0=bound_strategy, bound1=bound_strategy)
def test_llr_antisymmetry_property(counts: list[int], bound0: float, bound1: float) -> None:
    forward = llr_logistic(counts, bound0, bound1)
    backward = llr_logistic(counts, bound1, bound0)
    assert close(forward, -backward, 1e-9)


@given(st.floats(-1100, 1100, allow_nan=False))
def test_elo_round_trip_property(elo: float) -> None:
    assert score_to_elo(elo_to_score(elo)) == pytest.approx(elo, abs=1e-8)


# ------------------------------------------------- the root finder of the exact LLR


def _ref_profile_loglik_bisection(values: list[float], probs: list[float], s: float) -> float:
    """max sum p log q over q with mean s: bisection on the dual variable itself.

    Independent of the module's search (Brent's method over the smallest
    denominator): the stationarity condition ``sum p b / (1 + v b) = 0``,
    ``b = a - s``, decreases in ``v`` on ``(-1 / max b, -1 / min b)``; halve that
    interval until it cannot shrink, then take the dual value
    ``sum p log p - sum p log(1 + v b)``, which an error in ``v`` moves only to
    second order.
    """
    b = [a - s for a in values]
    lo, hi = -1.0 / max(b), -1.0 / min(b)
    while True:
        mid = lo + (hi - lo) / 2.0
        if not lo < mid < hi:
            break
        terms = [1.0 + mid * bi for bi in b]
        if min(terms) <= 0.0:  # rounding at an edge of the domain: step inwards
            if mid * b[0] < mid * b[-1]:
                hi = mid
            else:
                lo = mid
            continue
        slope = math.fsum(p * bi / t for p, bi, t in zip(probs, b, terms, strict=True))
        if slope == 0.0:
            lo = hi = mid
            break
        if slope > 0.0:
            lo = mid
        else:
            hi = mid
    v = lo + (hi - lo) / 2.0
    dual = math.fsum(p * math.log1p(v * bi) for p, bi in zip(probs, b, strict=True))
    return math.fsum(p * math.log(p) for p in probs) - dual


def _ref_llr_logistic_bisection(counts: Sequence[int], elo0: float, elo1: float) -> float:
    n, values, probs = _ref_pdf(counts)
    s0, s1 = _ref_logistic(elo0), _ref_logistic(elo1)
    return n * (
        _ref_profile_loglik_bisection(values, probs, s1)
        - _ref_profile_loglik_bisection(values, probs, s0)
    )


game_counts_strategy = st.one_of(
    st.lists(st.integers(0, 10**7), min_size=3, max_size=3),
    st.lists(st.integers(0, 10**7), min_size=5, max_size=5),
    st.lists(st.integers(0, 30), min_size=3, max_size=3),
    st.lists(st.integers(0, 30), min_size=5, max_size=5),
).filter(lambda c: sum(c) > 0)


@settings(max_examples=300, deadline=None)
@given(counts=game_counts_strategy, bound0=bound_strategy, bound1=bound_strategy)
def test_llr_logistic_matches_a_bisection_over_game_counts(
    counts: list[int], bound0: float, bound1: float
) -> None:
    expected = _ref_llr_logistic_bisection(counts, bound0, bound1)
    assert close(llr_logistic(counts, bound0, bound1), expected), expected


@pytest.mark.parametrize(("counts", "elo0", "elo1"), LLR_CASES)
def test_llr_logistic_cases_match_a_bisection(counts: list[int], elo0: float, elo1: float) -> None:
    expected = _ref_llr_logistic_bisection(counts, elo0, elo1)
    assert close(llr_logistic(counts, elo0, elo1), expected, 1e-9)


@pytest.mark.parametrize(
    ("func", "bracket", "root"),
    [
        (lambda x: x**3 - 2.0, (0.0, 2.0), 2.0 ** (1.0 / 3.0)),
        (lambda x: math.cos(x) - x, (0.0, 1.0), 0.7390851332151607),  # the Dottie number
        (lambda x: 1e-300 - x, (0.0, 1.0), 1e-300),  # a root next to the end of the bracket
        (lambda x: math.exp(x) - 1e-12, (-40.0, 0.0), math.log(1e-12)),
        (lambda x: 1.0 if x > 0.3 else -1.0, (0.0, 1.0), 0.3),  # a step: bisection only
    ],
)
def test_brent_root_converges_to_full_precision(
    func: Callable[[float], float], bracket: tuple[float, float], root: float
) -> None:
    calls = []

    def counted(x: float) -> float:
        calls.append(x)
        return func(x)

    a, b = bracket
    found = E._brent_root(counted, a, b, func(a), func(b))
    assert abs(found - root) <= 4 * sys.float_info.epsilon * abs(root) + 1e-300
    # guaranteed convergence: never many more evaluations than bisection to the same width
    assert len(calls) <= 4 * 1100


def _count_brent(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The evaluations of each root search Brent's method takes over (one item per search)."""
    brent_calls: list[int] = []
    brent = E._brent_root

    def counting(func: Callable[[float], float], *args: float) -> float:
        calls = [0]

        def counted(x: float) -> float:
            calls[0] += 1
            return func(x)

        found = brent(counted, *args)
        brent_calls.append(calls[0])
        return found

    monkeypatch.setattr(E, "_brent_root", counting)
    return brent_calls


def test_llr_root_finding_takes_few_evaluations(monkeypatch: pytest.MonkeyPatch) -> None:
    """Brent's method, unlike bisection (about 55 per root), needs a handful per root
    when Newton's steps hand over to it."""
    brent_calls = _count_brent(monkeypatch)
    extra = [(FISHTEST_PENTANOMIAL, -3.0, 1.0), ([0, 0, 2**53 - 1], 0.0, 5.0),
             ([10, 20, 30], -2000.0, 2000.0), ([3, 0, 1], 1500.0, -1500.0)]
    for case, elo0, elo1 in [*LLR_CASES, *extra]:
        llr_logistic(case, elo0, elo1)
    assert brent_calls and max(brent_calls) <= 15, brent_calls


@pytest.mark.parametrize(
    ("counts", "elo0", "elo1"),
    [
        (FISHTEST_PENTANOMIAL, -3.0, 1.0),
        (FISHTEST_TRINOMIAL, -3.0, 1.0),
        ([300, 400, 330], 0.0, 5.0),
        ([3049, 4000, 3198], 0.0, 5.0),
        ([1, 4, 10, 15, 10], 0.0, 5.0),
        ([40, 210, 500, 230, 45], -2.0, 3.0),
        ([0, 20, 30], 0.0, 5.0),
    ],
)
def test_usual_sprt_bounds_need_no_bracketing(
    monkeypatch: pytest.MonkeyPatch, counts: list[int], elo0: float, elo1: float
) -> None:
    """For bounds a few Elo apart around a result, Newton's steps from the Brownian
    approximation settle by themselves (Brent's method is not called), and the LLR is the
    bisection's."""
    brent_calls = _count_brent(monkeypatch)
    value = llr_logistic(counts, elo0, elo1)
    assert brent_calls == []
    assert close(value, _ref_llr_logistic_bisection(counts, elo0, elo1), 1e-9)


usual_result_strategy = st.one_of(
    st.tuples(st.integers(1, 10**6), st.integers(0, 10**6), st.integers(1, 10**6)).map(list),
    st.tuples(*[st.integers(1, 10**5)] * 5).map(list),
)


@settings(max_examples=300, deadline=None)
@given(counts=usual_result_strategy, low=st.floats(-30, 30), width=st.floats(0.5, 30))
def test_llr_logistic_for_usual_bounds_matches_a_bisection(
    counts: list[int], low: float, width: float
) -> None:
    """Results and bounds as SPRT tests have them (the fast path of the root search) agree
    with the independent bisection to 1e-9, absolute or relative."""
    expected = _ref_llr_logistic_bisection(counts, low, low + width)
    assert close(llr_logistic(counts, low, low + width), expected, 1e-9), expected


def test_cached_samples_never_stand_for_booleans_or_other_counts() -> None:
    first = logistic_elo([1, 2, 3])
    with pytest.raises(EloInputError, match=r"counts\[0\]: must be a non-negative integer"):
        logistic_elo([True, 2, 3])  # True == 1 and hashes like it: refused before any cache
    assert logistic_elo((1, 2, 3)) == first
    assert logistic_elo([1, 2, 4]).elo != first.elo
