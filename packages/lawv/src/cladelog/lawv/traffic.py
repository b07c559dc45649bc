"""The traffic light on R, with exact boundaries."""

from __future__ import annotations

__all__ = [
    "CONTINUE",
    "DECISION_DIGITS",
    "DEFECTIVE",
    "GAP",
    "HALT",
    "STATUS_DEFECTIVE",
    "STATUS_GAP",
    "STATUS_OK",
    "VERDICTS",
    "WARNING",
    "at_decision_precision",
    "classify",
]

CONTINUE = "CONTINUE"
WARNING = "WARNING"
HALT = "HALT"
GAP = "GAP"
DEFECTIVE = "DEFECTIVE"
#: Every verdict value a check can carry.
VERDICTS = (CONTINUE, WARNING, HALT, GAP, DEFECTIVE)

STATUS_OK = "ok"
STATUS_GAP = "GAP"
STATUS_DEFECTIVE = "DEFECTIVE"

#: R and the thresholds are rounded to this many decimals before they are compared,
#: so that a true 0.40 computed as 0.39999999999997 does not halt.
DECISION_DIGITS = 9


def at_decision_precision(value: float) -> float:
    """``value`` rounded half-to-even to :data:`DECISION_DIGITS` decimals."""
    return round(value, DECISION_DIGITS)


def classify(r: float, halt_below: float, warn_below: float) -> str:
    """HALT when R < halt_below, WARNING when halt_below <= R < warn_below, else CONTINUE.

    Both sides are rounded to :data:`DECISION_DIGITS` decimals first; R exactly at a
    threshold belongs to the better light (0.40 warns, 0.75 continues).
    """
    value = at_decision_precision(r)
    if value < at_decision_precision(halt_below):
        return HALT
    if value < at_decision_precision(warn_below):
        return WARNING
    return CONTINUE
