"""Battery deltas, the efficiency bonus, missing rates and the hard flags.

Rates
-----
For each battery the rate delta of a sub-battery is ``child rate - parent rate``.
The battery's *rate mean* is the mean of those deltas over the sub-batteries
that both documents report (0 when there are none). Missing data:

* present in the parent, absent in the child -> left out of the mean, listed in
  ``missing`` (``absent_in="child"``) **and** the hard flag
  ``MISSING_<battery>_<sub-battery>`` (a child must not hide a regression by
  dropping a metric);
* absent in the parent only, or in both -> left out of the mean and listed in
  ``missing`` (``absent_in="parent"`` / ``"both"``); no flag.

Hard regression
---------------
``REGRESSION_<battery>:<sub-battery>`` fires when a rate drops by the
hard-regression floor (default 5 percentage points) **or more**. The drop is
computed in decimal arithmetic on the shortest round-trip ``repr`` of each float
(with enough precision to be exact), so the boundary is exact: 0.80 -> 0.75 is
a drop of exactly 0.05 and fires; 0.80 -> 0.7500001 is a drop of 0.0499999 and
does not. Binary float subtraction would misjudge cases like 0.70 -> 0.65.

Efficiency bonus (5F only)
--------------------------
For each family of :data:`~cladelog.fork_score.batteries.EFFICIENCY_FAMILIES`
(``adaptation_efficiency`` read from ``finetuning``, ``feedback_efficiency``
read from ``feedback-loop``), using only keys present on both sides:

* ``EFFICIENCY_DAMPING x (child mean_finite - parent mean_finite)``;
* plus ``min(max(0, child infinite_count - parent infinite_count), INFINITE_BONUS_CAP)``
  -- the cap applies **per family**, so the two families together add at most
  ``2 x INFINITE_BONUS_CAP``; a decrease adds nothing (and costs nothing);
* an increase of ``neg_infinite_count`` raises the hard flag ``NEG_INF_REGRESSION``
  (reported once, whichever family caused it; the per-family increase is in
  the deltas).

Missing efficiency metrics: an efficiency key present on one side only is
listed in ``missing`` (with its ``metric``; ``absent_in="child"`` or
``"parent"``); a key absent on both sides is not listed (efficiency metrics are
optional extras). A ``*_neg_infinite_count`` the parent reports and the child
does not (the key, or the whole sub-battery, dropped) also raises the hard flag
``MISSING_5F_<family>_neg_infinite_count``: its increase is a hard reject, so a
child must not hide one by no longer reporting the count. A dropped
``*_mean_finite`` or ``*_infinite_count`` only forfeits its share of the bonus
and raises no flag.

``delta_5F = rate mean + efficiency bonus``; the other batteries have no bonus.
The regression penalty uses the rate mean only, so an efficiency bonus never
masks a rate regression.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Context, Decimal
from typing import Any, Literal

import attrs
from cladelog.fork_score.batteries import (
    BATTERIES,
    EFFICIENCY_FAMILIES,
    RATE_KEYS,
    BatteryResult,
)

__all__ = [
    "EFFICIENCY_DAMPING",
    "HARD_REGRESSION_FLOOR",
    "INFINITE_BONUS_CAP",
    "NEG_INF_REGRESSION",
    "BatteryDelta",
    "Comparison",
    "EfficiencyDelta",
    "MissingRate",
    "compare",
    "is_hard_regression",
]

#: Factor applied to the change in ``*_efficiency_mean_finite`` (keeps efficiency
#: from dominating rate-style improvements).
EFFICIENCY_DAMPING = 0.1

#: Largest bonus one efficiency family can earn from more ``+inf`` buckets.
INFINITE_BONUS_CAP = 1.0

#: Default hard-regression floor: a rate drop of 5 percentage points or more.
HARD_REGRESSION_FLOOR = 0.05

#: The hard flag for an increase of any ``*_efficiency_neg_infinite_count``.
NEG_INF_REGRESSION = "NEG_INF_REGRESSION"

# A shortest repr has <= 17 significant digits and an exponent >= -324, so the
# difference of two of them needs < 400 digits: this context subtracts exactly.
_EXACT = Context(prec=1100)


def is_hard_regression(parent_rate: float, child_rate: float, floor: float) -> bool:
    """True when ``parent_rate - child_rate >= floor``, decided exactly in decimal.

    Each float is read through its shortest round-trip ``repr`` (``0.75`` is
    the decimal 0.75, not the binary double's expansion).
    """
    # Far from the floor the binary difference decides safely (its error is a few
    # ulps, far below the margin); only near the floor is the decimal needed.
    approx = parent_rate - child_rate
    margin = 1e-9 * max(1.0, abs(parent_rate), abs(child_rate), abs(floor))
    if approx < floor - margin:
        return False
    if approx > floor + margin:
        return True
    drop = _EXACT.subtract(Decimal(repr(parent_rate)), Decimal(repr(child_rate)))
    return drop >= Decimal(repr(floor))


@attrs.frozen
class MissingRate:
    """A scored metric one side (or both) did not report, and which side lacked it.

    ``metric`` is ``None`` for the sub-battery's rate (left out of its battery
    mean), else the efficiency key (e.g. ``adaptation_efficiency_neg_infinite_count``).
    """

    battery: str
    sub_battery: str
    absent_in: Literal["parent", "child", "both"]
    metric: str | None = None

    def to_dict(self) -> dict[str, str]:
        """JSON-ready form (``metric`` only for an efficiency metric)."""
        out = {
            "battery": self.battery,
            "sub_battery": self.sub_battery,
            "absent_in": self.absent_in,
        }
        if self.metric is not None:
            out["metric"] = self.metric
        return out


@attrs.frozen
class EfficiencyDelta:
    """The efficiency comparison of one family (``None`` where a key was absent)."""

    family: str
    mean_finite_delta: float | None
    mean_finite_bonus: float
    infinite_count_increase: int | None
    infinite_bonus: float
    neg_infinite_count_increase: int | None

    @property
    def bonus(self) -> float:
        """What this family adds to delta_5F."""
        return self.mean_finite_bonus + self.infinite_bonus

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "mean_finite_delta": self.mean_finite_delta,
            "mean_finite_bonus": self.mean_finite_bonus,
            "infinite_count_increase": self.infinite_count_increase,
            "infinite_bonus": self.infinite_bonus,
            "neg_infinite_count_increase": self.neg_infinite_count_increase,
            "bonus": self.bonus,
        }


@attrs.frozen
class BatteryDelta:
    """The deltas of one battery.

    ``delta`` is what enters the formula (rate mean plus, for 5F, the
    efficiency bonus); ``rate_mean`` is the rate-only mean the regression
    penalty uses; ``sub_deltas`` has the rate delta of each compared sub-battery.
    """

    battery: str
    delta: float
    rate_mean: float
    efficiency_bonus: float
    sub_deltas: Mapping[str, float]
    efficiency: tuple[EfficiencyDelta, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        out: dict[str, Any] = {
            "delta": self.delta,
            "rate_mean": self.rate_mean,
            "efficiency_bonus": self.efficiency_bonus,
            "sub_batteries": dict(self.sub_deltas),
        }
        if self.efficiency:
            out["efficiency"] = {e.family: e.to_dict() for e in self.efficiency}
        return out


@attrs.frozen
class Comparison:
    """Everything the formula needs from the two battery results."""

    deltas: Mapping[str, BatteryDelta]
    flags: tuple[str, ...]
    missing: tuple[MissingRate, ...]

    @property
    def regression_penalty(self) -> float:
        """Sum over batteries of ``max(0, -rate mean)``."""
        total = 0.0
        for battery in BATTERIES:
            total += max(0.0, -self.deltas[battery].rate_mean)
        return total


def compare(
    parent: BatteryResult, child: BatteryResult, hard_regression_floor: float
) -> Comparison:
    """Compare two validated battery results (see the module docstring)."""
    deltas: dict[str, BatteryDelta] = {}
    flags: list[str] = []
    missing: list[MissingRate] = []
    for battery in BATTERIES:
        sub_deltas: dict[str, float] = {}
        for sub_battery in RATE_KEYS[battery]:
            p = parent.rate(battery, sub_battery)
            c = child.rate(battery, sub_battery)
            if p is None or c is None:
                absent: Literal["parent", "child", "both"]
                absent = "both" if p is None and c is None else "parent" if p is None else "child"
                missing.append(MissingRate(battery, sub_battery, absent))
                if absent == "child":
                    flags.append(f"MISSING_{battery}_{sub_battery}")
                continue
            sub_deltas[sub_battery] = c - p
            if is_hard_regression(p, c, hard_regression_floor):
                flags.append(f"REGRESSION_{battery}:{sub_battery}")
        rate_mean = _mean(list(sub_deltas.values()))
        efficiency: tuple[EfficiencyDelta, ...] = ()
        if battery == "5F":
            efficiency = tuple(_efficiency(parent, child, family) for family in EFFICIENCY_FAMILIES)
            for family in EFFICIENCY_FAMILIES:
                dropped_neg = _missing_efficiency(parent, child, family, missing)
                if dropped_neg:
                    flags.append(_dropped_neg_infinite_flag(family))
        bonus = 0.0
        for family_delta in efficiency:
            bonus += family_delta.bonus
        deltas[battery] = BatteryDelta(
            battery=battery,
            delta=rate_mean + bonus,
            rate_mean=rate_mean,
            efficiency_bonus=bonus,
            sub_deltas=sub_deltas,
            efficiency=efficiency,
        )
        if any((e.neg_infinite_count_increase or 0) > 0 for e in efficiency):
            flags.append(NEG_INF_REGRESSION)
    return Comparison(deltas=deltas, flags=tuple(flags), missing=tuple(missing))


def _dropped_neg_infinite_flag(family: str) -> str:
    """The hard flag for a ``<family>_neg_infinite_count`` the child dropped."""
    return f"MISSING_5F_{family}_neg_infinite_count"


#: The efficiency metrics of a family: key suffix = EfficiencyReading attribute.
_EFFICIENCY_METRICS = ("mean_finite", "infinite_count", "neg_infinite_count")


def _missing_efficiency(
    parent: BatteryResult, child: BatteryResult, family: str, missing: list[MissingRate]
) -> bool:
    """List the family's efficiency keys reported by one side only in ``missing``;
    return whether the parent's ``neg_infinite_count`` is absent in the child."""
    carrier = EFFICIENCY_FAMILIES[family]
    p = parent.efficiency(family)
    c = child.efficiency(family)
    dropped_neg = False
    for suffix in _EFFICIENCY_METRICS:
        in_parent = p is not None and getattr(p, suffix) is not None
        in_child = c is not None and getattr(c, suffix) is not None
        if in_parent == in_child:
            continue
        absent: Literal["parent", "child"] = "child" if in_parent else "parent"
        missing.append(MissingRate("5F", carrier, absent, metric=f"{family}_{suffix}"))
        if absent == "child" and suffix == "neg_infinite_count":
            dropped_neg = True
    return dropped_neg


def _mean(values: list[float]) -> float:
    if not values:
        return 0.0
    total = 0.0
    for value in values:
        total += value
    return total / len(values)


def _efficiency(parent: BatteryResult, child: BatteryResult, family: str) -> EfficiencyDelta:
    p = parent.efficiency(family)
    c = child.efficiency(family)
    mean_delta = None
    inf_increase = None
    neg_increase = None
    if p is not None and c is not None:
        if p.mean_finite is not None and c.mean_finite is not None:
            mean_delta = c.mean_finite - p.mean_finite
        if p.infinite_count is not None and c.infinite_count is not None:
            inf_increase = c.infinite_count - p.infinite_count
        if p.neg_infinite_count is not None and c.neg_infinite_count is not None:
            neg_increase = c.neg_infinite_count - p.neg_infinite_count
    mean_bonus = 0.0 if mean_delta is None else EFFICIENCY_DAMPING * mean_delta
    inf_bonus = (
        0.0 if inf_increase is None else min(float(max(inf_increase, 0)), INFINITE_BONUS_CAP)
    )
    return EfficiencyDelta(
        family=family,
        mean_finite_delta=mean_delta,
        mean_finite_bonus=mean_bonus,
        infinite_count_increase=inf_increase,
        infinite_bonus=inf_bonus,
        neg_infinite_count_increase=neg_increase,
    )
