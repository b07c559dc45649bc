"""Elo, normalized Elo and SPRT log-likelihood ratios from game counts.

This module is the shared arithmetic behind every rating number in cladelog:
receipts uses it to recompute the Elo and LLR an oracle claims, lawv uses it to
turn anchor match results into Elo differences. It is pure (no I/O, no clock, no
randomness), uses the standard library only, and follows the definitions of the
fishtest framework (``server/fishtest/stats/stat_util.py`` and ``LLRcalc.py``)
so that every number agrees with fishtest to 1e-6 (absolute, or relative for
magnitudes above 1: an LLR over millions of games carries float noise beyond
1e-6 in fishtest itself) wherever fishtest gives one. Where fishtest's own root
finder gives up (a root within 1e-9 of the edge of its domain, which happens
for very lopsided results) this module still returns the exact value.

Which Elo: the estimates here are the plain maximum-likelihood ones from the
counts (fishtest's ``get_elo``), for every stage kind. For an SPRT test, fishtest's
result pages also show an estimate corrected for the bias of early stopping
(``sprt.analytics``); that correction is not computed here, and receipts compare an
oracle's claimed Elo with the plain estimate for SPRT and fixed-length stages alike
(the register's issue defines the claim that way).

Input: game counts
------------------
``counts`` is a list or tuple of non-negative ``int`` (``bool`` is refused):

* 3 counts, the *trinomial* model: ``[losses, draws, wins]``. Each game is one
  sample with score 0, 1/2 or 1.
* 5 counts, the *pentanomial* model, for games played in pairs (same opening,
  colours swapped): ``[LL, LD+DL, LW+DD+WL, DW+WD, WW]``. Each *pair* is one
  sample whose mean score is 0, 1/4, 1/2, 3/4 or 1; a pair is two games.

In both models the k counts describe a discrete distribution on the scores
``i / (k - 1)`` (``i = 0 .. k-1``). The sample size ``N`` is the number of
samples (games, or pairs); ``mean`` and ``var`` below are the mean and the
variance of that distribution, i.e. the mean score per game and the variance
of one sample's score.

Regularisation (how zero counts are handled)
--------------------------------------------
Before any statistic is computed, every count equal to zero is replaced by
``0.001`` (:data:`REGULARIZATION_EPSILON`); other counts are left alone, and the
regularised total becomes ``N``. This is fishtest's own rule. It is what keeps
degenerate results (all wins, all losses, all draws, one single game) finite:
every score value keeps a tiny positive probability, so ``var > 0`` always and
``0 < mean < 1`` (in floating point the mean of a result as lopsided as
10**13 wins and nothing else rounds to 1.0; :func:`score_to_elo`'s clamp
absorbs that). The effect on results with no zero count is nil, and on
realistic results with a zero cell it is negligible. Note that ``score``,
``elo`` and every other output are computed from the regularised counts, while
``LogisticElo.games`` reports the real number of games.

Logistic Elo and its interval (:func:`logistic_elo`)
----------------------------------------------------
The logistic model links an Elo difference ``d`` to the expected score
``s = 1 / (1 + 10 ** (-d / 400))`` (:func:`elo_to_score`); its inverse is
``d = -400 * log10(1 / s - 1)`` (:func:`score_to_elo`). Like fishtest,
:func:`score_to_elo` first clamps the score into ``[0.001, 0.999]``
(:data:`SCORE_CLAMP`), so an Elo computed here always lies within about
``+-1199.83``; this clamp only bites on extreme results.

* ``score`` is ``mean``; ``elo = score_to_elo(score)``.
* The interval is the normal-approximation interval for the mean score,
  ``mean +- z * sqrt(var / N)`` with ``z`` the two-sided normal quantile of
  ``confidence`` (1.959964 for 0.95), mapped through :func:`score_to_elo` (with
  its clamp); its half width is ``half_width = (elo(hi) - elo(lo)) / 2``, and,
  as fishtest reports it, the interval is placed symmetrically around the
  point estimate: ``[elo - half_width, elo + half_width]``
  (:data:`INTERVAL_METHOD`).
* ``los`` (likelihood of superiority) is ``Phi((mean - 1/2) / sqrt(var / N))``.

For the pentanomial model ``var`` is the variance of a pair's mean score, so
``var / N`` is already the variance of the mean score: the pairing, which
cancels the opening bias, narrows the interval exactly as fishtest's does.

Normalized Elo (:func:`normalized_elo`)
---------------------------------------
Normalized Elo measures a difference in units of the per-game noise:
``nelo = (800 / ln 10) * (mean - 1/2) / sigma_per_game``, where
``sigma_per_game = sqrt(var)`` (trinomial) or ``sqrt(2 * var)`` (pentanomial;
a pair holds two games). Its interval is the delta-method interval of the
t-value ``t = (mean - 1/2) / sqrt(var)`` of one sample:
``t +- z * sqrt(v_t / N)`` with
``v_t = max(0, 1 - t * skewness + t**2 * (excess_kurtosis + 2) / 4)``, scaled
the same way. This is symmetric around ``nelo``.

Log-likelihood ratios
---------------------
:func:`llr_logistic` is the generalized (maximum-likelihood) log-likelihood
ratio of H1: ``expected score = s1`` against H0: ``expected score = s0`` with
``s0, s1`` the scores of the logistic Elo bounds. Under each hypothesis the
likelihood is maximised over all distributions on the k score values with the
prescribed mean; the maximiser has the closed form
``q_i = p_i / (1 + x * (a_i - s))`` where ``p_i`` are the regularised observed
frequencies, ``a_i`` the score values and ``x`` the unique root, inside the
interval where every denominator is positive, of
``sum_i p_i (a_i - s) / (1 + x (a_i - s)) = 0``. This module finds the root
to full double precision by Newton's method from the Brownian approximation
(one to three evaluations for the usual bounds around a result), handing over to Brent's
method (guaranteed convergence, like bisection, in a handful of evaluations
instead of about 55) whenever Newton's steps do not settle at once, searching
over the smallest denominator rather than over ``x`` so that lopsided results,
whose root lies extremely close to the edge of that interval, lose no
precision. Then
``LLR = N * sum_i p_i * (log q1_i - log q0_i)``. This is fishtest's default
SPRT statistic.

:func:`llr_normalized` does the same with the hypotheses expressed in
normalized Elo: the likelihood is maximised over the distributions whose
t-value ``(mean - 1/2) / sd`` equals ``nelo / (800 / ln 10)`` (times ``sqrt 2``
for pairs). The maximiser is found with fishtest's fixed-point scheme: start
from the uniform distribution, freeze its mean and sd in the stationarity
condition, solve the resulting secular equation, and repeat (at most 10 rounds,
stopping once no probability moves by more than 1e-9), exactly as fishtest
does so the two agree. If that scheme cannot proceed, or ends off the
constraint by 1e-5 or more (seen only for bounds beyond about 100 normalized
Elo on lopsided results, where fishtest itself fails with an assertion), the
function returns fishtest's documented closed-form approximation instead:
``(games / 2) * ln((1 + (nt - nt0)**2) / (1 + (nt - nt1)**2))`` where ``nt``
is the observed normalized t-value per game and ``games`` the number of games.

:func:`llr_brownian` is the Brownian-motion (normal) approximation of the
logistic LLR: ``N * (s1 - s0) * (2 * mean - s0 - s1) / (2 * var)``. It is
cheaper and close to :func:`llr_logistic` when the data fit the bounds, less
accurate under extreme conditions.

SPRT decision
-------------
:func:`sprt_bounds` gives Wald's bounds ``A = ln(beta / (1 - alpha))`` and
``B = ln((1 - beta) / alpha)``; :func:`sprt_status` answers ``"H1"`` when
``llr >= B``, ``"H0"`` when ``llr <= A`` and ``"continue"`` otherwise.

Validation and limits
---------------------
Bad input raises :class:`EloInputError` (a ``ValueError``) with a one-line
message naming the field, e.g. ``counts[2]: must be a non-negative integer,
got -1``. Counts must not exceed ``2**53 - 1`` (:data:`MAX_COUNT`, beyond which
a float cannot hold them), ``alpha`` and ``beta`` lie in (0, 1) with
``alpha + beta < 1`` (otherwise the two SPRT bounds cross), ``confidence`` lies
in (0, 1), and Elo / normalized Elo bounds are finite with magnitude at most
:data:`MAX_BOUND` (2000; a logistic Elo of 2000 is a score of 0.99999). For any
valid input every output is a finite float.
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable, Sequence
from statistics import NormalDist
from typing import Final, Literal, NamedTuple

import attrs

from .canonical import MAX_SAFE_INTEGER
from .errors import InputError

__all__ = [
    "INTERVAL_METHOD",
    "MAX_BOUND",
    "MAX_COUNT",
    "NELO_PER_T",
    "REGULARIZATION_EPSILON",
    "SCORE_CLAMP",
    "EloInputError",
    "LogisticElo",
    "Model",
    "NormalizedElo",
    "elo_to_score",
    "llr_brownian",
    "llr_logistic",
    "llr_normalized",
    "logistic_elo",
    "normalized_elo",
    "score_to_elo",
    "sprt_bounds",
    "sprt_status",
]

Model = Literal["trinomial", "pentanomial"]

#: A zero count is replaced by this value before any statistic is computed.
REGULARIZATION_EPSILON: Final[float] = 1e-3
#: :func:`score_to_elo` clamps its argument into ``[SCORE_CLAMP, 1 - SCORE_CLAMP]``.
SCORE_CLAMP: Final[float] = 1e-3
#: Largest accepted single count (the largest integer a double holds exactly).
MAX_COUNT: Final[int] = MAX_SAFE_INTEGER
#: Largest accepted magnitude of an Elo or normalized-Elo SPRT bound.
MAX_BOUND: Final[float] = 2000.0
#: Normalized Elo per unit of per-game t-value: ``800 / ln(10)``.
NELO_PER_T: Final[float] = 800.0 / math.log(10.0)
#: The ``interval_method`` of every :class:`LogisticElo`.
INTERVAL_METHOD: Final[str] = (
    "normal interval on the mean score mapped to Elo, half width centred on the estimate"
)

_STANDARD_NORMAL: Final = NormalDist()
_T_VALUE_ROUNDS: Final[int] = 10
_T_VALUE_TOLERANCE: Final[float] = 1e-9
_T_VALUE_CHECK: Final[float] = 1e-5
_ROOT_EVALUATIONS: Final[int] = 4000
_NEWTON_STEPS: Final[int] = 5
_EPSILON: Final[float] = sys.float_info.epsilon
_TINY: Final[float] = 5e-324  # the smallest positive double


class EloInputError(InputError):
    """Invalid input to an Elo/SPRT function; the message names the field."""


@attrs.frozen
class LogisticElo:
    """Logistic Elo estimate of a match result (see the module docstring).

    ``games`` is the real number of games (two per pair in the pentanomial
    model); every other field is computed from the regularised counts.
    """

    model: Model
    games: int
    score: float
    elo: float
    elo_lower: float
    elo_upper: float
    half_width: float
    los: float
    interval_method: str


@attrs.frozen
class NormalizedElo:
    """Normalized Elo estimate of a match result with its symmetric interval."""

    model: Model
    nelo: float
    nelo_lower: float
    nelo_upper: float
    half_width: float


# --------------------------------------------------------------------------- validation


def _shown(value: object) -> str:
    """A short rendering of a rejected value for an error message."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        kind = "a negative" if value < 0 else "an"
        return f"{kind} integer of {value.bit_length()} bits"
    if isinstance(value, (bool, int, float)):
        return repr(value)
    return type(value).__name__


def _finite(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise EloInputError(f"{name}: must be a real number, got {type(value).__name__}")
    try:
        number = float(value)
    except OverflowError:  # an int beyond the float range
        number = math.inf
    if not math.isfinite(number):
        raise EloInputError(f"{name}: must be finite, got {_shown(value)}")
    return number


def _open_unit(name: str, value: object) -> float:
    number = _finite(name, value)
    if not 0.0 < number < 1.0:
        raise EloInputError(f"{name}: must lie in (0, 1), got {_shown(value)}")
    return number


def _bound(name: str, value: object) -> float:
    number = _finite(name, value)
    if abs(number) > MAX_BOUND:
        raise EloInputError(
            f"{name}: must lie in [-{MAX_BOUND:g}, {MAX_BOUND:g}], got {_shown(value)}"
        )
    return number


def _counts(counts: object) -> tuple[int, ...]:
    if type(counts) is list or type(counts) is tuple:  # the common case, checked in one pass
        plain = tuple(counts)
        if len(plain) in (3, 5) and any(plain):
            for count in plain:
                if type(count) is not int or not 0 <= count <= MAX_COUNT:
                    break
            else:
                return plain
    # anything else: the checks one by one, raising with the field's name
    if not isinstance(counts, (list, tuple)):
        raise EloInputError(
            f"counts: must be a list or tuple of 3 or 5 counts, got {type(counts).__name__}"
        )
    if len(counts) not in (3, 5):
        raise EloInputError(f"counts: must hold 3 or 5 counts, got {len(counts)}")
    checked: list[int] = []
    for index, count in enumerate(counts):
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise EloInputError(
                f"counts[{index}]: must be a non-negative integer, got {_shown(count)}"
            )
        if count > MAX_COUNT:
            raise EloInputError(f"counts[{index}]: must be at most 2**53 - 1, got {_shown(count)}")
        checked.append(int(count))
    if sum(checked) == 0:
        raise EloInputError("counts: total number of games must be positive, got 0")
    return tuple(checked)


# ------------------------------------------------------------------ the regularised sample


class _Sample(NamedTuple):
    """Regularised empirical distribution of one sample's score (a named tuple: the
    cheapest immutable record, built once per result)."""

    model: Model
    samples: int  # real number of samples (games or pairs)
    size: float  # regularised number of samples N
    values: tuple[float, ...]  # score of one sample: i / (k - 1)
    probs: tuple[float, ...]  # regularised frequencies, summing to 1
    mean: float
    var: float  # always > 0 thanks to the regularisation
    third: float  # third central moment
    fourth: float  # fourth central moment

    @property
    def games_per_sample(self) -> int:
        return 1 if self.model == "trinomial" else 2


def _moments(values: Sequence[float], probs: Sequence[float]) -> tuple[float, float]:
    mean = math.fsum([p * a for a, p in zip(values, probs, strict=True)])
    var = math.fsum([p * (a - mean) ** 2 for a, p in zip(values, probs, strict=True)])
    return mean, var


def _sample(counts: object) -> _Sample:
    return _sample_of(_counts(counts))


#: the score values ``i / (k - 1)`` of one sample, for k = 3 and 5 counts
_VALUES: Final[dict[int, tuple[float, ...]]] = {
    k: tuple([i / (k - 1) for i in range(k)]) for k in (3, 5)
}


@functools.lru_cache(maxsize=16)
def _sample_of(checked: tuple[int, ...]) -> _Sample:
    """The regularised sample of validated counts (plain ``int``: ``True`` never gets here).

    Cached, as the sample is immutable and a pure function of the counts: the estimates
    and the LLR of one result (a receipt's stage, say) each start from the same sample.
    """
    weights = [float(c) if c else REGULARIZATION_EPSILON for c in checked]
    size = math.fsum(weights)
    values = _VALUES[len(weights)]
    probs = tuple([w / size for w in weights])
    mean, var = _moments(values, probs)
    deviations = [a - mean for a in values]
    third = math.fsum([p * d**3 for d, p in zip(deviations, probs, strict=True)])
    fourth = math.fsum([p * d**4 for d, p in zip(deviations, probs, strict=True)])
    return _Sample("trinomial" if len(checked) == 3 else "pentanomial", sum(checked), size,
                   values, probs, mean, var, third, fourth)


def _two_sided_z(confidence: object) -> float:
    if type(confidence) is float:  # hashable and not a bool: the cached quantile
        return _two_sided_z_of(confidence)
    return _z_of(_open_unit("confidence", confidence))


@functools.lru_cache(maxsize=8)
def _two_sided_z_of(confidence: float) -> float:
    """:func:`_two_sided_z` of a float (cached: every estimate asks for the same level)."""
    return _z_of(_open_unit("confidence", confidence))


def _z_of(level: float) -> float:
    # Lower-tail quantile, negated: (1 - level) / 2 is never rounded to 0.
    return -_STANDARD_NORMAL.inv_cdf((1.0 - level) / 2.0)


# ---------------------------------------------------------------------- score <-> Elo


def elo_to_score(elo: float) -> float:
    """Expected score ``1 / (1 + 10 ** (-elo / 400))`` of a logistic Elo difference.

    ``elo`` must be a finite real; the result lies in [0, 1] (it only reaches
    0 or 1 through floating-point underflow, for ``|elo|`` above ~123000).
    """
    value = _finite("elo", elo)
    if value >= 0.0:
        return 1.0 / (1.0 + math.pow(10.0, -value / 400.0))
    odds = math.pow(10.0, value / 400.0)
    return odds / (1.0 + odds)


def _clamped_elo(score: float) -> float:
    clamped = min(max(score, SCORE_CLAMP), 1.0 - SCORE_CLAMP)
    return -400.0 * math.log10(1.0 / clamped - 1.0)


def score_to_elo(score: float) -> float:
    """Logistic Elo difference ``-400 * log10(1 / score - 1)`` of a mean score.

    ``score`` must lie in [0, 1]; it is first clamped into
    ``[SCORE_CLAMP, 1 - SCORE_CLAMP]`` (fishtest's convention), so the result is
    always finite and within about +-1199.83.
    """
    value = _finite("score", score)
    if not 0.0 <= value <= 1.0:
        raise EloInputError(f"score: must lie in [0, 1], got {_shown(score)}")
    return _clamped_elo(value)


# ------------------------------------------------------------------------- estimates


def logistic_elo(counts: Sequence[int], confidence: float = 0.95) -> LogisticElo:
    """Logistic Elo, its confidence interval and the LOS of a match result.

    ``counts`` is ``[losses, draws, wins]`` or the pentanomial pair counts
    ``[LL, LD+DL, LW+DD+WL, DW+WD, WW]``, from the point of view of the player
    whose Elo advantage is estimated. See the module docstring for the method.
    """
    z = _two_sided_z(confidence)
    sample = _sample(counts)
    std_error = math.sqrt(sample.var / sample.size)
    elo = _clamped_elo(sample.mean)
    high = _clamped_elo(sample.mean + z * std_error)
    low = _clamped_elo(sample.mean - z * std_error)
    half_width = (high - low) / 2.0
    los = _STANDARD_NORMAL.cdf((sample.mean - 0.5) / std_error)
    return LogisticElo(
        model=sample.model,
        games=sample.samples * sample.games_per_sample,
        score=sample.mean,
        elo=elo,
        elo_lower=elo - half_width,
        elo_upper=elo + half_width,
        half_width=half_width,
        los=los,
        interval_method=INTERVAL_METHOD,
    )


def normalized_elo(counts: Sequence[int], confidence: float = 0.95) -> NormalizedElo:
    """Normalized Elo of a match result with its delta-method confidence interval.

    ``counts`` as for :func:`logistic_elo`; see the module docstring.
    """
    z = _two_sided_z(confidence)
    sample = _sample(counts)
    sd = math.sqrt(sample.var)
    skewness = sample.third / sample.var**1.5
    excess_kurtosis = sample.fourth / sample.var**2 - 3.0
    t = (sample.mean - 0.5) / sd
    var_t = max(1.0 - t * skewness + 0.25 * t * t * (excess_kurtosis + 2.0), 0.0)
    scale = NELO_PER_T / math.sqrt(sample.games_per_sample)
    nelo = scale * t
    half_width = scale * z * math.sqrt(var_t / sample.size)
    return NormalizedElo(
        model=sample.model,
        nelo=nelo,
        nelo_lower=nelo - half_width,
        nelo_upper=nelo + half_width,
        half_width=half_width,
    )


# -------------------------------------------------------------------------- the MLE core


def _brent_root(func: Callable[[float], float], a: float, b: float, fa: float, fb: float) -> float:
    """A root of ``func`` in the bracket ``[a, b]`` (``fa``, ``fb`` of opposite signs).

    Brent's method (R. P. Brent, *Algorithms for Minimization without
    Derivatives*, 1973, ch. 4, procedure ``zero``): each step tries inverse
    quadratic interpolation or the secant through the best points, and falls
    back to bisection whenever that step would leave the bracket or shrink it
    too slowly, so it converges whenever bisection does, after at most a few
    times as many evaluations as bisection and usually far fewer. It stops when
    the bracket is within ``4 * eps * |root|`` (full double precision, also for
    a root very close to 0) or an evaluation is exactly 0.
    """
    c, fc = a, fa
    step = previous = b - a
    for _ in range(_ROOT_EVALUATIONS):
        if (fb > 0.0) == (fc > 0.0):  # keep the root between b and c
            c, fc = a, fa
            step = previous = b - a
        if abs(fc) < abs(fb):  # b is the best point so far
            a, b, c = b, c, b
            fa, fb, fc = fb, fc, fb
        tolerance = 2.0 * _EPSILON * abs(b) + _TINY
        half = (c - b) / 2.0
        if abs(half) <= tolerance or fb == 0.0:
            return b
        if abs(previous) >= tolerance and abs(fa) > abs(fb):
            s = fb / fa
            if a == c:  # secant
                p = 2.0 * half * s
                q = 1.0 - s
            else:  # inverse quadratic interpolation through a, b, c
                r = fb / fc
                t = fa / fc
                p = s * (2.0 * half * t * (t - r) - (b - a) * (r - 1.0))
                q = (t - 1.0) * (r - 1.0) * (s - 1.0)
            if p > 0.0:
                q = -q
            else:
                p = -p
            if 2.0 * p < min(3.0 * half * q - abs(tolerance * q), abs(previous * q)):
                previous, step = step, p / q
            else:
                previous = step = half
        else:
            previous = step = half
        a, fa = b, fb
        b += step if abs(step) > tolerance else (tolerance if half > 0.0 else -tolerance)
        fb = func(b)
    return b  # pragma: no cover - Brent's bound is far below _ROOT_EVALUATIONS


def _secular_denominators(probs: Sequence[float], offsets: Sequence[float]) -> list[float] | None:
    """Denominators ``d_i = 1 + x b_i`` at the root ``x`` of the secular equation.

    The secular function ``f(x) = sum p_i b_i / (1 + x b_i)`` decreases from
    +inf to -inf on the interval where every ``1 + x b_i > 0``, provided the
    offsets ``b_i`` take both signs (otherwise None is returned). The root lies
    on the side of 0 given by the sign of ``f(0) = sum p_i b_i``; on that side
    it is searched through ``w = 1 + x e``, the denominator of the extreme
    offset ``e`` there, which runs over (0, 1). Every denominator is then
    ``((e - b_i) + w b_i) / e``: no cancellation, even when the root is very
    close to the edge of the domain (a heavily lopsided result), so each
    ``d_i`` keeps full relative precision. The root in ``w`` is that of
    ``h(w) = w f = p_e e + w * sum_{i != e} p_i b_i e / D_i`` with
    ``D_i = (e - b_i) + w b_i``, which, unlike ``f``, is finite on the whole
    closed bracket ``[0, 1]``: ``h(0) = p_e e`` and ``h(1) = f(0)`` have
    opposite signs.

    The root is found by Newton's method on ``h`` (``h'(w) = sum_{i != e} p_i b_i e
    (e - b_i) / D_i**2``) from a close start, at most :data:`_NEWTON_STEPS` steps, each
    kept inside the bracket the evaluations so far have narrowed; Newton's step from
    ``x = 0`` (``x = f(0) / sum p_i b_i**2``, the Brownian approximation) when it falls
    inside the bracket, else Newton's step from ``w = 0`` (exact in the limit of a
    lopsided result). For the usual SPRT bounds around a result, that is one to three
    evaluations (Brent's method took about six). It stops when a step is within
    ``2 * eps * w`` (full double precision). A step that would leave the bracket, a
    flat slope, or no convergence in those steps hands the narrowed bracket to Brent's
    method (:func:`_brent_root`), whose convergence is guaranteed.
    """
    top = max(offsets)
    bottom = min(offsets)
    if not (top > 0.0 > bottom):
        return None
    at_zero = math.fsum([p * b for p, b in zip(probs, offsets, strict=True)])
    if at_zero == 0.0:
        return [1.0] * len(offsets)
    # f(0) < 0: root at x < 0, near -1/top; f(0) > 0: root at x > 0, near -1/bottom.
    extreme = top if at_zero < 0.0 else bottom
    edge = 0.0
    others: list[tuple[float, float, float]] = []  # (p_i b_i e, gap_i, b_i) for i != e
    for p, b in zip(probs, offsets, strict=True):
        if b == extreme:
            edge += p * b
        else:
            others.append((p * b * extreme, extreme - b, b))

    def scaled(w: float) -> float:
        return edge + w * math.fsum([pbe / (gap + w * b) for pbe, gap, b in others])

    low, h_low, high, h_high = 0.0, edge, 1.0, at_zero  # h(low) has the sign of edge
    second = math.fsum([p * b * b for p, b in zip(probs, offsets, strict=True)])
    w = 1.0 + extreme * at_zero / second
    if not 0.0 < w < 1.0:
        w = -edge / math.fsum([pbe / gap for pbe, gap, _ in others])
    for _ in range(_NEWTON_STEPS):
        if not low < w < high:
            break
        terms = [pbe / (gap + w * b) for pbe, gap, b in others]
        value = edge + w * math.fsum(terms)
        if value == 0.0:
            return [(extreme - b + w * b) / extreme for b in offsets]
        if (value > 0.0) == (edge > 0.0):
            low, h_low = w, value
        else:
            high, h_high = w, value
        slope = math.fsum([t * gap / (gap + w * b)
                           for t, (_, gap, b) in zip(terms, others, strict=True)])
        if slope == 0.0:
            break
        step = value / slope
        w -= step
        if abs(step) <= 2.0 * _EPSILON * abs(w) + _TINY:
            if low <= w <= high and w > 0.0:
                return [(extreme - b + w * b) / extreme for b in offsets]
            break
    root = _brent_root(scaled, low, high, h_low, h_high)
    return [(extreme - b + root * b) / extreme for b in offsets]


def _mle_with_mean(sample: _Sample, target: float) -> list[float] | None:
    offsets = [a - target for a in sample.values]
    found = _secular_denominators(sample.probs, offsets)
    if found is None:
        return None
    return [p / d for p, d in zip(sample.probs, found, strict=True)]


def _mle_with_t_value(sample: _Sample, target: float) -> list[float] | None:
    size = len(sample.values)
    current = [1.0 / size] * size
    for _ in range(_T_VALUE_ROUNDS):
        mean, var = _moments(sample.values, current)
        if not var > 0.0:
            return None
        sd = math.sqrt(var)
        offsets = [
            a - 0.5 - target * sd * (1.0 + ((mean - a) / sd) ** 2) / 2.0 for a in sample.values
        ]
        found = _secular_denominators(sample.probs, offsets)
        if found is None:
            return None
        following = [p / d for p, d in zip(sample.probs, found, strict=True)]
        moved = max(abs(x - y) for x, y in zip(current, following, strict=True))
        current = following
        if moved < _T_VALUE_TOLERANCE:
            break
    mean, var = _moments(sample.values, current)
    if not var > 0.0 or abs((mean - 0.5) / math.sqrt(var) - target) >= _T_VALUE_CHECK:
        return None
    return current


def _log_ratio(sample: _Sample, null: Sequence[float], alternative: Sequence[float]) -> float:
    per_sample = math.fsum(
        [
            p * (math.log(q1) - math.log(q0))
            for p, q0, q1 in zip(sample.probs, null, alternative, strict=True)
        ]
    )
    return sample.size * per_sample


def llr_logistic(counts: Sequence[int], elo0: float, elo1: float) -> float:
    """Generalized log-likelihood ratio of H1 ``elo = elo1`` vs H0 ``elo = elo0``.

    Bounds are logistic Elo; the likelihood under each hypothesis is maximised
    over all score distributions with that expected score (fishtest's default
    SPRT statistic). Positive values favour H1.
    """
    score0 = elo_to_score(_bound("elo0", elo0))
    score1 = elo_to_score(_bound("elo1", elo1))
    sample = _sample(counts)
    null = _mle_with_mean(sample, score0)
    alternative = _mle_with_mean(sample, score1)
    if null is None or alternative is None:  # pragma: no cover - excluded by MAX_BOUND
        raise EloInputError("elo0, elo1: bounds too extreme for the MLE")
    return _log_ratio(sample, null, alternative)


def llr_normalized(counts: Sequence[int], nelo0: float, nelo1: float) -> float:
    """Generalized log-likelihood ratio for bounds in normalized Elo.

    The likelihood under each hypothesis is maximised over the score
    distributions with the hypothesis' t-value; see the module docstring for
    the method and for the closed-form fallback.
    """
    bound0 = _bound("nelo0", nelo0)
    bound1 = _bound("nelo1", nelo1)
    sample = _sample(counts)
    factor = math.sqrt(sample.games_per_sample) / NELO_PER_T
    null = _mle_with_t_value(sample, bound0 * factor)
    alternative = _mle_with_t_value(sample, bound1 * factor)
    if null is not None and alternative is not None:
        return _log_ratio(sample, null, alternative)
    games = sample.size * sample.games_per_sample
    observed = (sample.mean - 0.5) / math.sqrt(sample.games_per_sample * sample.var)
    t0 = bound0 / NELO_PER_T
    t1 = bound1 / NELO_PER_T
    return (games / 2.0) * (math.log1p((observed - t0) ** 2) - math.log1p((observed - t1) ** 2))


def llr_brownian(counts: Sequence[int], elo0: float, elo1: float) -> float:
    """Brownian (normal) approximation of :func:`llr_logistic`.

    ``N * (s1 - s0) * (2 * mean - s0 - s1) / (2 * var)`` with ``s0, s1`` the
    expected scores of the bounds; see the module docstring.
    """
    score0 = elo_to_score(_bound("elo0", elo0))
    score1 = elo_to_score(_bound("elo1", elo1))
    sample = _sample(counts)
    drift = (score1 - score0) * (2.0 * sample.mean - score0 - score1) / (2.0 * sample.var)
    return sample.size * drift


# --------------------------------------------------------------------------------- SPRT


def sprt_bounds(alpha: float, beta: float) -> tuple[float, float]:
    """Wald's SPRT bounds ``(A, B) = (ln(beta / (1 - alpha)), ln((1 - beta) / alpha))``.

    ``alpha`` is the false-positive rate, ``beta`` the false-negative rate;
    both lie in (0, 1) and ``alpha + beta < 1``, so that ``A < 0 < B``.
    """
    if type(alpha) is float and type(beta) is float:  # hashable, not bools: cached
        return _sprt_bounds_of(alpha, beta)
    return _sprt_bounds(alpha, beta)


@functools.lru_cache(maxsize=16)
def _sprt_bounds_of(alpha: float, beta: float) -> tuple[float, float]:
    """:func:`sprt_bounds` of two floats (cached: a register checks the same rates again
    and again, once when parsing a criterion and once when recomputing it)."""
    return _sprt_bounds(alpha, beta)


def _sprt_bounds(alpha: object, beta: object) -> tuple[float, float]:
    a = _open_unit("alpha", alpha)
    b = _open_unit("beta", beta)
    if not a + b < 1.0:
        raise EloInputError(f"alpha + beta: must be below 1, got {a + b!r}")
    return math.log(b / (1.0 - a)), math.log((1.0 - b) / a)


def sprt_status(llr: float, alpha: float, beta: float) -> str:
    """``"H1"`` if ``llr >= B``, ``"H0"`` if ``llr <= A``, else ``"continue"``."""
    value = _finite("llr", llr)
    lower, upper = sprt_bounds(alpha, beta)
    if value >= upper:
        return "H1"
    if value <= lower:
        return "H0"
    return "continue"
