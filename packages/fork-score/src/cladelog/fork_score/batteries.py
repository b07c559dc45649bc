"""The battery-result input form: the scored vocabulary and a strict reader.

A battery-result document is a JSON object with a ``batteries`` member::

    {"batteries": {"5S": {"syntax": {"parse_pass_rate": 0.91, ...}, ...},
                   "5T": {...},
                   "5F": {"finetuning": {"adaptation_improvement_rate": 0.4,
                                         "adaptation_efficiency_mean_finite": 2.0,
                                         "adaptation_efficiency_infinite_count": 0,
                                         "adaptation_efficiency_neg_infinite_count": 0},
                          ...}}}

Only the rate named in :data:`RATE_KEYS` scores for each sub-battery, plus the
efficiency metrics of :data:`EFFICIENCY_FAMILIES` in 5F. Everything else is
accepted and ignored: other top-level members (an organism id, timestamps),
other metrics inside a sub-battery, and sub-batteries that are not in the
table (among them the legacy ``transfer`` sub-battery of 5T, which is never
scored; ``transfer-learning`` is the one that counts). An unknown *battery*
is an error, because it is most likely a typo that would silently drop data.

What is read is read strictly (:class:`~cladelog.fork_score.errors.BatteryInputError`,
path relative to the side, e.g. ``child.5F.finetuning.adaptation_improvement_rate``):

* rates are numbers (``bool`` is not) in ``[0, 1]``;
* ``*_mean_finite`` are finite numbers;
* ``*_infinite_count`` and ``*_neg_infinite_count`` are non-negative integers;
* a metric that was not measured must be left out, not set to ``null``.

A sub-battery object without its rate key counts as a missing rate. The JSON
Schema of this form ships as ``schema/battery-result.schema.json``.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs
from cladelog.core.fields import finite_number, safe_count, short_text
from cladelog.fork_score.errors import BatteryInputError

__all__ = [
    "BATTERIES",
    "EFFICIENCY_FAMILIES",
    "IGNORED_SUB_BATTERIES",
    "RATE_KEYS",
    "BatteryResult",
    "EfficiencyReading",
    "SubBatteryReading",
    "read_battery_result",
]

#: The rate that scores for each sub-battery, per battery, in table order.
RATE_KEYS: Mapping[str, Mapping[str, str]] = {
    "5S": {
        "syntax": "parse_pass_rate",
        "semantics": "equivalence_recovery_rate",
        "syllogism": "step_validity_rate",
        "synthesis": "derivation_pass_rate",
        "semiotics": "invariance_under_swap",
    },
    "5T": {
        "transfer-learning": "transfer_learning_success_rate",
        "triangulation": "triangulation_agreement_rate",
        "truthtables": "truth_table_coverage_rate",
        "transitivity": "full_chain_pass_rate",
        "time": "temporal_context_preservation_rate",
    },
    "5F": {
        "function": "function_pass_rate",
        "finetuning": "adaptation_improvement_rate",
        "falsification": "error_detection_rate",
        "formulate": "structural_match_rate",
        "feedback-loop": "integration_coverage_rate",
    },
}

#: The three batteries, in formula order.
BATTERIES: tuple[str, ...] = tuple(RATE_KEYS)

#: Efficiency metric families of 5F: key prefix -> the sub-battery that carries them.
EFFICIENCY_FAMILIES: Mapping[str, str] = {
    "adaptation_efficiency": "finetuning",
    "feedback_efficiency": "feedback-loop",
}

#: Sub-batteries that may appear but never score (documented exclusions).
IGNORED_SUB_BATTERIES: Mapping[str, tuple[str, ...]] = {"5T": ("transfer",)}


@attrs.frozen
class EfficiencyReading:
    """The efficiency metrics of one family; ``None`` where the key is absent."""

    mean_finite: float | None = None
    infinite_count: int | None = None
    neg_infinite_count: int | None = None


@attrs.frozen
class SubBatteryReading:
    """What scores in one sub-battery: its rate (``None`` if absent) and efficiency."""

    rate: float | None = None
    efficiency: EfficiencyReading | None = None


@attrs.frozen
class BatteryResult:
    """A validated battery-result document.

    ``readings[battery][sub_battery]`` exists only for sub-batteries present in
    the document (with or without their rate).
    """

    readings: Mapping[str, Mapping[str, SubBatteryReading]]

    def rate(self, battery: str, sub_battery: str) -> float | None:
        """The rate of ``battery.sub_battery``, or ``None`` when absent."""
        reading = self.readings.get(battery, {}).get(sub_battery)
        return None if reading is None else reading.rate

    def efficiency(self, family: str) -> EfficiencyReading | None:
        """The efficiency metrics of ``family`` (see :data:`EFFICIENCY_FAMILIES`)."""
        reading = self.readings.get("5F", {}).get(EFFICIENCY_FAMILIES[family])
        return None if reading is None else reading.efficiency


def read_battery_result(document: object, side: str) -> BatteryResult:
    """Validate ``document`` and extract what scores; ``side`` prefixes error paths.

    Raises :class:`BatteryInputError` naming the first offending path.
    """
    if not isinstance(document, Mapping):
        raise BatteryInputError(f"{side}: must be an object, got {type(document).__name__}")
    if "batteries" not in document:
        raise BatteryInputError(f"{side}.batteries: required member is missing")
    batteries = document["batteries"]
    if not isinstance(batteries, Mapping):
        raise BatteryInputError(
            f"{side}.batteries: must be an object, got {type(batteries).__name__}"
        )
    readings: dict[str, dict[str, SubBatteryReading]] = {}
    for battery, subs in batteries.items():
        if not isinstance(battery, str) or battery not in RATE_KEYS:
            shown = battery if isinstance(battery, str) else repr(battery)
            raise BatteryInputError(
                f"{side}.{short_text(shown)}: unknown battery (expected one of "
                f"{', '.join(BATTERIES)})"
            )
        readings[battery] = _read_battery(battery, subs, f"{side}.{battery}")
    return BatteryResult(readings=readings)


def _read_battery(battery: str, subs: object, path: str) -> dict[str, SubBatteryReading]:
    if not isinstance(subs, Mapping):
        raise BatteryInputError(f"{path}: must be an object, got {type(subs).__name__}")
    out: dict[str, SubBatteryReading] = {}
    for sub_battery, rate_key in RATE_KEYS[battery].items():
        if sub_battery not in subs:
            continue
        metrics = subs[sub_battery]
        sub_path = f"{path}.{sub_battery}"
        if not isinstance(metrics, Mapping):
            raise BatteryInputError(f"{sub_path}: must be an object, got {type(metrics).__name__}")
        rate = None
        if rate_key in metrics:
            rate = _read_rate(metrics[rate_key], f"{sub_path}.{rate_key}")
        efficiency = None
        for family, carrier in EFFICIENCY_FAMILIES.items():
            if battery == "5F" and carrier == sub_battery:
                efficiency = _read_efficiency(metrics, family, sub_path)
        out[sub_battery] = SubBatteryReading(rate=rate, efficiency=efficiency)
    return out


def _read_rate(value: object, path: str) -> float:
    rate = finite_number(value, path, BatteryInputError)
    if not 0.0 <= rate <= 1.0:
        raise BatteryInputError(f"{path}: must lie in [0, 1], got {value!r}")
    return rate


def _read_efficiency(metrics: Mapping[object, object], family: str, path: str) -> EfficiencyReading:
    mean_key = f"{family}_mean_finite"
    inf_key = f"{family}_infinite_count"
    neg_key = f"{family}_neg_infinite_count"
    mean = None
    if mean_key in metrics:
        mean = finite_number(metrics[mean_key], f"{path}.{mean_key}", BatteryInputError)
    inf_count = None
    if inf_key in metrics:
        inf_count = safe_count(metrics[inf_key], f"{path}.{inf_key}", BatteryInputError)
    neg_count = None
    if neg_key in metrics:
        neg_count = safe_count(metrics[neg_key], f"{path}.{neg_key}", BatteryInputError)
    return EfficiencyReading(
        mean_finite=mean, infinite_count=inf_count, neg_infinite_count=neg_count
    )
