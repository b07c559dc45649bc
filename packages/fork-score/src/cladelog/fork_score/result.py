"""The scored fork: verdict, breakdown, flags and everything needed to audit it."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Any

import attrs
from cladelog.fork_score.deltas import BatteryDelta, MissingRate
from cladelog.fork_score.weights import WeightSet

__all__ = ["SIGNAL_FLOOR", "ScoredFork", "Verdict", "decide_verdict"]

#: Default signal floor: the least score that counts as a real improvement.
SIGNAL_FLOOR = 0.05


class Verdict(enum.StrEnum):
    """ACCEPT (enough signal, no hard flag), MARGINAL (too little signal), REJECT."""

    ACCEPT = "ACCEPT"
    MARGINAL = "MARGINAL"
    REJECT = "REJECT"


def decide_verdict(
    score: float, flags: tuple[str, ...] | list[str], signal_floor: float,
    hard_flag_gating: bool = True,
) -> Verdict:
    """REJECT on any hard flag or a negative score; ACCEPT from ``signal_floor`` up;
    MARGINAL in between (``0 <= score < signal_floor``).

    With ``hard_flag_gating`` false (the seed's Phase 1b switch, by which an operator
    turns hard-flag gating off) the flags no longer decide: only a negative score
    is REJECT. The flags are still computed and reported, and the soft
    RegressionPenalty is part of ``score`` either way.
    """
    if (flags and hard_flag_gating) or score < 0:
        return Verdict.REJECT
    if score >= signal_floor:
        return Verdict.ACCEPT
    return Verdict.MARGINAL


def _as_flags(flags: Iterable[str]) -> list[str]:
    return list(flags)


def _as_missing(missing: Iterable[MissingRate]) -> list[MissingRate]:
    return list(missing)


@attrs.frozen
class ScoredFork:
    """The result of :func:`cladelog.fork_score.score`.

    * ``score`` -- the sum of ``breakdown`` values, added in breakdown order;
    * ``verdict`` -- see :func:`decide_verdict`;
    * ``breakdown`` -- signed contribution of each term, keyed
      ``<weight>_x_<term>`` / ``minus_<weight>_x_<term>``: the eleven built-ins in
      formula order, then extra terms by name;
    * ``flags`` -- hard flags (strings) in a fixed order (batteries 5S, 5T, 5F; sub-batteries
      in table order; then ``MISSING_5F_<family>_neg_infinite_count`` per family whose
      count the child dropped; ``NEG_INF_REGRESSION`` last);
    * ``deltas`` -- per battery, the delta used in the formula and the rate-only mean;
    * ``missing`` -- rates left out of a battery mean, and efficiency metrics reported
      by one side only (:class:`MissingRate`, with ``metric`` set for those);
    * ``weights`` / ``weights_id`` -- the effective weight set and its identity;
    * ``inputs`` -- the caller scalars as used (defaults filled in);
    * ``term_values`` -- each term's unweighted value, keyed by term name;
    * ``thresholds`` -- the signal floor and hard-regression floor applied;
    * ``hard_flag_gating`` -- whether hard flags forced REJECT (true unless the
      deployment turned gating off); part of ``weights_id``
      (:func:`~cladelog.fork_score.weights.weights_id`).
    """

    score: float
    verdict: Verdict
    breakdown: Mapping[str, float]
    flags: list[str] = attrs.field(converter=_as_flags)
    deltas: Mapping[str, BatteryDelta]
    missing: list[MissingRate] = attrs.field(converter=_as_missing)
    weights_id: str
    weights: WeightSet
    inputs: Mapping[str, float | int]
    term_values: Mapping[str, float]
    thresholds: Mapping[str, float]
    hard_flag_gating: bool = True

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (plain dicts, lists, strings and finite numbers)."""
        return {
            "score": self.score,
            "verdict": str(self.verdict),
            "breakdown": dict(self.breakdown),
            "flags": list(self.flags),
            "deltas": {battery: d.to_dict() for battery, d in self.deltas.items()},
            "missing": [m.to_dict() for m in self.missing],
            "weights_id": self.weights_id,
            "weights": self.weights.to_json_dict(),
            "inputs": dict(self.inputs),
            "term_values": dict(self.term_values),
            "thresholds": dict(self.thresholds),
            "hard_flag_gating": self.hard_flag_gating,
        }
