"""Independent statistics for the tests, written from the formulas (not cladelog.core.elo).

Trinomial model, counts [losses, draws, wins], all counts non-zero (so the
zero-count regularisation of the library plays no part):

    N      = L + D + W
    mean   = (W + D / 2) / N
    var    = (L * mean**2 + D * (1/2 - mean)**2 + W * (1 - mean)**2) / N
    elo(s) = -400 * log10(1 / s - 1)
    se     = sqrt(var / N)
    half   = (elo(mean + z se) - elo(mean - z se)) / 2,   z = 1.959963984540054
    nelo   = (800 / ln 10) * (mean - 1/2) / sqrt(var)
    LLR    = N * sum p_i (ln q1_i - ln q0_i),  q_i = p_i / (1 + x (a_i - s)), where x
             solves sum p_i (a_i - s) / (1 + x (a_i - s)) = 0 (maximum likelihood with
             mean s, found here by plain bisection on x)
"""

from __future__ import annotations

import math

Z95 = 1.959963984540054


def elo_of(score: float) -> float:
    return -400.0 * math.log10(1.0 / score - 1.0)


def score_of(elo: float) -> float:
    return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))


def moments(counts: tuple[int, ...]) -> tuple[float, float, float, list[float], list[float]]:
    n = float(sum(counts))
    values = [i / (len(counts) - 1) for i in range(len(counts))]
    probs = [c / n for c in counts]
    mean = sum(p * a for p, a in zip(probs, values, strict=True))
    var = sum(p * (a - mean) ** 2 for p, a in zip(probs, values, strict=True))
    return n, mean, var, values, probs


def logistic(counts: tuple[int, ...]) -> tuple[float, float]:
    """(elo, half width) of the 95% interval."""
    n, mean, var, _, _ = moments(counts)
    se = math.sqrt(var / n)
    return elo_of(mean), (elo_of(mean + Z95 * se) - elo_of(mean - Z95 * se)) / 2.0


def nelo(counts: tuple[int, int, int]) -> float:
    _, mean, var, _, _ = moments(counts)
    return 800.0 / math.log(10.0) * (mean - 0.5) / math.sqrt(var)


def _mle(values: list[float], probs: list[float], s: float) -> list[float]:
    b = [a - s for a in values]
    lo, hi = -1.0 / max(b) + 1e-15, -1.0 / min(b) - 1e-15
    for _ in range(200):
        x = (lo + hi) / 2.0
        f = sum(p * bi / (1.0 + x * bi) for p, bi in zip(probs, b, strict=True))
        if f > 0:
            lo = x
        else:
            hi = x
    return [p / (1.0 + x * bi) for p, bi in zip(probs, b, strict=True)]


def llr(counts: tuple[int, ...], elo0: float, elo1: float) -> float:
    n, _, _, values, probs = moments(counts)
    q0 = _mle(values, probs, score_of(elo0))
    q1 = _mle(values, probs, score_of(elo1))
    return n * sum(p * (math.log(a) - math.log(b)) for p, a, b in zip(probs, q1, q0, strict=True))


def sprt_upper(alpha: float, beta: float) -> float:
    return math.log((1.0 - beta) / alpha)
