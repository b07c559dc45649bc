"""ForkScore: a pure function of a (parent, child) pair of battery results.

The score is the seed formula, each term ``sign x weight x value``::

    ForkScore = alpha * delta_5S + beta * delta_5T + gamma * delta_5F
              + delta * SelfModelCalibrationGain + epsilon * AuditCompleteness
              + zeta * ValidatorDiversity
              - eta * RegressionPenalty - theta * CapitalCostPenalty
              - iota * SecurityRiskPenalty - kappa * ComplexityPenalty
              - lambda * MemoryInvalidationPenalty
              + (extra terms contributed by other plugins)

Term values:

* delta_5S/5T/5F and RegressionPenalty come from the battery results
  (:mod:`cladelog.fork_score.deltas`);
* SelfModelCalibrationGain, AuditCompleteness, ValidatorDiversity,
  CapitalCostPenalty (= ``capital_delta``; positive when the child costs more,
  so a cheaper child earns a reward) and MemoryInvalidationPenalty
  (= ``memory_invalidation_count``) are caller scalars, default 0;
* SecurityRiskPenalty and ComplexityPenalty are 0 unless an extra term fills
  them (weight name ``iota`` / ``kappa``).

Extra terms follow the contract in :mod:`cladelog.fork_score.terms`: a
:class:`~cladelog.fork_score.terms.ScoringTerm` adds ``sign x weight x fn(parent,
child, inputs)`` under ``<weight_name>_x_<name>`` (``minus_...`` for sign -1);
its weight defaults to ``default_weight`` and may be overridden in the weights
file; a term with weight name ``iota`` or ``kappa`` supplies that reserved
built-in term instead of adding a key.

The score is the sum of the breakdown values added left to right in breakdown
order (the built-ins in formula order, then extra terms by name), so the
breakdown always adds up to the score exactly. The verdict is ACCEPT when the
score reaches the signal floor with no hard flag, MARGINAL for ``0 <= score <
signal floor`` with no hard flag, and REJECT for a negative score or any hard
flag -- unless hard-flag gating is turned off (``hard_flag_gating=False``, the
deployment setting of the same name): then the flags are reported but only a
negative score is REJECT.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

import attrs
from cladelog.core.fields import finite_number, safe_count, short_text, shown
from cladelog.fork_score.batteries import read_battery_result
from cladelog.fork_score.deltas import HARD_REGRESSION_FLOOR, compare
from cladelog.fork_score.errors import ScalarInputError, WeightsError
from cladelog.fork_score.result import SIGNAL_FLOOR, ScoredFork, decide_verdict
from cladelog.fork_score.terms import BUILTIN_TERMS, ScoringTerm, check_terms, evaluate_term
from cladelog.fork_score.weights import WeightSet, default_weights, load_weights, weights_id

__all__ = ["SCALAR_DEFAULTS", "read_scalars", "score"]

#: The caller-supplied scalars and their defaults.
SCALAR_DEFAULTS: Mapping[str, float | int] = MappingProxyType(
    {
        "capital_delta": 0.0,
        "selfmodel_calibration_gain": 0.0,
        "audit_completeness": 0.0,
        "memory_invalidation_count": 0,
        "validator_diversity": 0.0,
    }
)


def read_scalars(scalars: Mapping[str, Any]) -> dict[str, float | int]:
    """Validate caller scalars and fill in defaults.

    ``audit_completeness`` must lie in [0, 1], ``memory_invalidation_count`` is a
    non-negative integer, the others are finite numbers. Unknown names raise
    :class:`ScalarInputError`.
    """
    out: dict[str, float | int] = dict(SCALAR_DEFAULTS)
    for name, value in scalars.items():
        if name not in SCALAR_DEFAULTS:
            raise ScalarInputError(
                f"{short_text(str(name))}: unknown scalar (known: {', '.join(SCALAR_DEFAULTS)})"
            )
        if name == "memory_invalidation_count":
            out[name] = safe_count(value, name, ScalarInputError)
            continue
        number = finite_number(value, name, ScalarInputError)
        if name == "audit_completeness" and not 0.0 <= number <= 1.0:
            raise ScalarInputError(f"{name}: must lie in [0, 1], got {value!r}")
        out[name] = number
    return out


def score(
    parent: Mapping[str, Any],
    child: Mapping[str, Any],
    weights: WeightSet | Mapping[str, Any] | None = None,
    *,
    extra_terms: Iterable[ScoringTerm] = (),
    signal_floor: float = SIGNAL_FLOOR,
    hard_regression_floor: float = HARD_REGRESSION_FLOOR,
    hard_flag_gating: bool = True,
    **scalars: Any,
) -> ScoredFork:
    """Score the fork ``parent -> child`` and return a :class:`ScoredFork`.

    :param parent: the parent's battery-result document (see
        :mod:`cladelog.fork_score.batteries`).
    :param child: the child's battery-result document.
    :param weights: a :class:`WeightSet`, a JSON-style mapping of overrides
        (read with :func:`load_weights`), or ``None`` for the defaults. Weights
        of extra terms missing from a given set take the term's default.
    :param extra_terms: extra :class:`ScoringTerm` objects (see
        :mod:`cladelog.fork_score.terms`).
    :param signal_floor: least score for ACCEPT (finite, ``>= 0``).
    :param hard_regression_floor: rate drop that raises a hard regression flag
        (``0 < floor <= 1``; the drop counts when it is at least this much).
    :param hard_flag_gating: whether a hard flag forces REJECT (default true). When
        false the flags are still computed and reported in ``flags``, the soft
        RegressionPenalty stays in the score, and only a negative score is REJECT;
        the setting is part of the reported ``weights_id``.
    :param scalars: ``capital_delta``, ``selfmodel_calibration_gain``,
        ``audit_completeness`` (in [0, 1]), ``memory_invalidation_count``
        (integer >= 0), ``validator_diversity``; all default to 0.
    :raises ForkScoreError: (a :class:`ValueError`) on any bad input, naming the
        path: :class:`BatteryInputError`, :class:`WeightsError`,
        :class:`ScalarInputError` or :class:`ScoringTermError`.
    """
    terms = check_terms(extra_terms)
    effective = _effective_weights(weights, terms)
    inputs = read_scalars(scalars)
    floors = _read_floors(signal_floor, hard_regression_floor)
    if hard_flag_gating is not True and hard_flag_gating is not False:
        raise ScalarInputError(f"hard_flag_gating: must be true or false, "
                               f"got {shown(hard_flag_gating)}")
    parent_result = read_battery_result(parent, "parent")
    child_result = read_battery_result(child, "child")
    comparison = compare(parent_result, child_result, floors["hard_regression_floor"])

    values: dict[str, float] = {
        "delta_5s": comparison.deltas["5S"].delta,
        "delta_5t": comparison.deltas["5T"].delta,
        "delta_5f": comparison.deltas["5F"].delta,
        "selfmodel_calibration_gain": float(inputs["selfmodel_calibration_gain"]),
        "audit_completeness": float(inputs["audit_completeness"]),
        "validator_diversity": float(inputs["validator_diversity"]),
        "regression_penalty": comparison.regression_penalty,
        "capital_cost_penalty": float(inputs["capital_delta"]),
        "security_risk_penalty": 0.0,
        "complexity_penalty": 0.0,
        "memory_invalidation": float(inputs["memory_invalidation_count"]),
    }
    view = MappingProxyType(dict(inputs))
    builtin_by_weight = {t.weight_name: t.name for t in BUILTIN_TERMS}
    extra_values: dict[str, float] = {}
    for term in terms:
        value = evaluate_term(term, parent, child, view)
        if term.fills is not None:
            values[builtin_by_weight[term.fills]] = value
        else:
            extra_values[term.name] = value

    breakdown: dict[str, float] = {}
    for builtin in BUILTIN_TERMS:
        breakdown[builtin.key] = (
            builtin.sign * effective.get(builtin.weight_name) * values[builtin.name]
        )
    for term in terms:
        if term.fills is None:
            breakdown[term.key] = (
                term.sign * effective.get(term.weight_name) * extra_values[term.name]
            )
    total = 0.0
    for contribution in breakdown.values():
        total += contribution
    term_values = {**values, **extra_values}
    _require_finite(term_values, breakdown, total)
    return ScoredFork(
        score=total,
        verdict=decide_verdict(total, comparison.flags, floors["signal_floor"],
                               hard_flag_gating),
        breakdown=breakdown,
        flags=comparison.flags,
        deltas=comparison.deltas,
        missing=comparison.missing,
        weights_id=weights_id(effective, hard_flag_gating=hard_flag_gating),
        weights=effective,
        inputs=inputs,
        term_values=term_values,
        thresholds=floors,
        hard_flag_gating=hard_flag_gating,
    )


def _effective_weights(
    weights: WeightSet | Mapping[str, Any] | None, terms: tuple[ScoringTerm, ...]
) -> WeightSet:
    if weights is None:
        return default_weights(terms)
    if isinstance(weights, Mapping):
        return load_weights(weights, terms)
    if not isinstance(weights, WeightSet):
        raise WeightsError(
            f"weights: must be a WeightSet, a mapping or None, got {type(weights).__name__}"
        )
    used = {t.weight_name: t.default_weight for t in terms if t.fills is None}
    if not used and not weights.extra:
        return weights
    extra = dict(weights.extra)
    for name in extra:
        if name not in used:
            raise WeightsError(f"weights.{short_text(name)}: no extra term uses this weight")
    for name, default in used.items():
        extra.setdefault(name, default)
    return attrs.evolve(weights, extra=extra)


def _read_floors(signal_floor: Any, hard_regression_floor: Any) -> dict[str, float]:
    signal = finite_number(signal_floor, "signal_floor", ScalarInputError)
    if signal < 0:
        raise ScalarInputError(f"signal_floor: must be >= 0, got {signal_floor!r}")
    hard = finite_number(hard_regression_floor, "hard_regression_floor", ScalarInputError)
    if not 0 < hard <= 1:
        raise ScalarInputError(
            f"hard_regression_floor: must lie in (0, 1], got {hard_regression_floor!r}"
        )
    return {"signal_floor": signal, "hard_regression_floor": hard}


def _require_finite(
    term_values: Mapping[str, float], breakdown: Mapping[str, float], total: float
) -> None:
    for name, value in term_values.items():
        if not math.isfinite(value):
            raise ScalarInputError(f"{name}: arithmetic overflow (value is {value!r})")
    for key, value in breakdown.items():
        if not math.isfinite(value):
            raise ScalarInputError(f"breakdown.{key}: arithmetic overflow (value is {value!r})")
    if not math.isfinite(total):
        raise ScalarInputError(f"score: arithmetic overflow (value is {total!r})")
