"""The ComplexityPenalty term: lines of code the child adds, in thousands.

Input: the child document may carry a ``complexity`` object::

    {"batteries": {...}, "complexity": {"loc_delta": 1200}}

``loc_delta`` is the change in lines of code from parent to child (an integer;
negative when the child is smaller). The penalty value is
``max(0, loc_delta) / 1000``: growth costs, shrinking earns nothing. With no
``complexity`` object, or no ``loc_delta`` in it, the value is 0 (not
measured). The fork-score weight is ``kappa``, default :data:`DEFAULT_KAPPA`
(0.05 per thousand lines), so 1200 added lines take ``0.05 x 1.2 = 0.06`` off
the score. The parent document is not read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cladelog.fork_score import ScoringTerm

__all__ = [
    "DEFAULT_KAPPA",
    "LINES_PER_UNIT",
    "MAX_LOC_DELTA",
    "TERM_NAME",
    "ComplexityInputError",
    "complexity_penalty",
    "complexity_term",
]

#: Lines of code per unit of penalty.
LINES_PER_UNIT = 1000
#: Default weight of the term (``kappa``), per unit.
DEFAULT_KAPPA = 0.05
#: Largest ``|loc_delta|`` accepted (integers a double holds exactly).
MAX_LOC_DELTA = 2**53 - 1
#: The term's name (its key in ``term_values``).
TERM_NAME = "loc_growth"


class ComplexityInputError(ValueError):
    """The child's ``complexity`` object is malformed; the message names the field."""


def complexity_penalty(parent: Any, child: Any, inputs: Mapping[str, Any]) -> float:
    """The penalty value ``max(0, child.complexity.loc_delta) / 1000`` (0 when absent)."""
    if not isinstance(child, Mapping) or "complexity" not in child:
        return 0.0
    complexity = child["complexity"]
    if not isinstance(complexity, Mapping):
        raise ComplexityInputError(
            f"child.complexity: must be an object, got {type(complexity).__name__}"
        )
    if "loc_delta" not in complexity:
        return 0.0
    loc_delta = complexity["loc_delta"]
    if isinstance(loc_delta, bool) or not isinstance(loc_delta, int):
        raise ComplexityInputError(
            f"child.complexity.loc_delta: must be an integer, got {type(loc_delta).__name__}"
        )
    if abs(loc_delta) > MAX_LOC_DELTA:
        raise ComplexityInputError("child.complexity.loc_delta: must satisfy |n| <= 2**53 - 1")
    return max(0, loc_delta) / LINES_PER_UNIT


def complexity_term() -> ScoringTerm:
    """The term as fork-score takes it: fills ``kappa`` (ComplexityPenalty), sign -1."""
    return ScoringTerm(name=TERM_NAME, weight_name="kappa", default_weight=DEFAULT_KAPPA,
                       sign=-1, fn=complexity_penalty)
