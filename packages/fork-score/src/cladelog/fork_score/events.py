"""The event types fork-score writes (public, versioned contracts).

``fork_score.branch_scored`` (schema version 2) -- one fork was scored as a
branch of a branch set. Stream: ``fork_score.branch_set:<branch_set_id>``.

=====================  ===============  ==========================================
member                 JSON type        meaning
=====================  ===============  ==========================================
``branch_set_id``      string           the checkpoint the branch competes at
``branch_id``          string           the fork (child root or proposer key)
``parent_root``        string           the shared parent
``child_root``         string or null   the child, null for an in-flight branch
``score``              number           ``ScoredFork.score``
``verdict``            string           ``ACCEPT``, ``MARGINAL`` or ``REJECT``
``flags``              array of string  hard flags, in the scorer's order
``breakdown``          object           breakdown key -> signed contribution
``weights_id``         string           identity of the effective weight set
``estimator_version``  string           version of the scorer that produced it
``hard_flag_gating``   boolean          whether hard flags forced REJECT (v2)
=====================  ===============  ==========================================

Version 2 added ``hard_flag_gating`` (the deployment setting of that name; false
means the flags were reported but did not decide the verdict). A version-1 event
is read as ``hard_flag_gating: true``, which is how every version-1 scoring was
decided; a new event that leaves the member out gets ``true`` too.

Ids (``branch_set_id``, ``branch_id``, ``parent_root``, ``child_root``) are 1 to
128 printable characters, not all blank. The time of a scoring is the event's
own ``recorded_at`` (set by the log when the event is appended, and covered by
the hash chain); the payload carries no clock reading of its own, so
projections never consult a clock.

Consistency (checked by :class:`BranchScored` itself, so an event appended by
hand with ``cladelog append`` is held to it too; each refusal is a
``ValueError`` naming the field):

* ``breakdown`` holds every one of the eleven built-in keys
  (:data:`~cladelog.fork_score.terms.BUILTIN_TERMS`); any other key must be one
  an extra term can produce: ``<weight>_x_<name>`` or ``minus_<weight>_x_<name>``
  with both parts ``[a-z][a-z0-9_]*`` (at most 64 characters), the weight not a
  built-in weight (``iota``/``kappa`` terms report under the built-in key) nor
  ``lambda_``, the name not a built-in term name. The event does not record
  which terms were active, so any number of such keys is accepted. Every
  contribution is a finite number.
* ``score`` equals the sum of the breakdown, added the way the scorer adds it:
  the eleven built-ins in formula order, then extra terms ordered by term name,
  left to right, compared with ``==``. The order does not depend on the
  breakdown's own key order (a stored event comes back with sorted keys). When
  a key's term name cannot be told apart (a key with more than one ``_x_``, such
  as ``mu_x_a_x_b``: term ``a_x_b`` of weight ``mu`` or term ``b`` of weight
  ``mu_x_a``), the scorer's order is not known and the check is against the
  exact sum (:func:`math.fsum`) within ``n x 2**-52 x sum(|contribution|)``,
  ``n`` the number of keys -- a bound on the rounding error of adding ``n``
  numbers in any order.
* ``verdict`` follows the rules that do not depend on the deployment's
  settings: any hard flag (when ``hard_flag_gating`` is true), or a negative
  score, means ``REJECT``; otherwise (no flag or gating off, and a score
  ``>= 0``) the verdict is ``ACCEPT`` or ``MARGINAL``. Which of the
  two depends on the signal floor, a setting the event does not record, so
  that choice is not checked (the gate allows both alike).
"""

from __future__ import annotations

import math
from typing import Any

import attrs
from cladelog.core import EventType
from cladelog.fork_score.terms import (
    _IDENTIFIER,  # the syntax of term and weight names, shared with ScoringTerm
    BUILTIN_TERM_NAMES,
    BUILTIN_TERMS,
    BUILTIN_WEIGHT_NAMES,
)

__all__ = [
    "BRANCH_SCORED",
    "ESTIMATOR_VERSION",
    "EVENT_TYPES",
    "MAX_ID_LENGTH",
    "VERDICTS",
    "BranchScored",
    "branch_set_stream",
    "check_id",
]

#: Version of the scorer recorded with every scored branch.
ESTIMATOR_VERSION = "0.1.0"
#: Longest id accepted for a branch set, branch or root.
MAX_ID_LENGTH = 128
VERDICTS = ("ACCEPT", "MARGINAL", "REJECT")


def check_id(value: Any, path: str) -> str:
    """Return ``value`` if it is a valid id, else raise ``ValueError`` naming ``path``."""
    if not isinstance(value, str):
        raise ValueError(f"{path}: must be a string, got {type(value).__name__}")
    if not value.strip():
        raise ValueError(f"{path}: must not be empty or blank")
    if len(value) > MAX_ID_LENGTH:
        raise ValueError(f"{path}: at most {MAX_ID_LENGTH} characters, got {len(value)}")
    if not value.isprintable():
        raise ValueError(f"{path}: must not contain control characters")
    return value


def _id(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    check_id(value, attribute.name)


def _optional_id(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None:
        check_id(value, attribute.name)


def _verdict(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value not in VERDICTS:
        raise ValueError(f"verdict: must be one of {', '.join(VERDICTS)}, got {value!r:.40}")


def _finite(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not math.isfinite(value):
        raise ValueError(f"{attribute.name}: must be finite")


def _non_empty(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not value:
        raise ValueError(f"{attribute.name}: must not be empty")


@attrs.frozen
class BranchScored:
    """Payload of ``fork_score.branch_scored`` v1 (see the module docstring)."""

    branch_set_id: str = attrs.field(validator=_id)
    branch_id: str = attrs.field(validator=_id)
    parent_root: str = attrs.field(validator=_id)
    child_root: str | None = attrs.field(validator=_optional_id)
    score: float = attrs.field(validator=_finite)
    verdict: str = attrs.field(validator=_verdict)
    flags: list[str]
    breakdown: dict[str, float]
    weights_id: str = attrs.field(validator=_non_empty)
    estimator_version: str = attrs.field(validator=_non_empty)
    hard_flag_gating: bool = True

    def __attrs_post_init__(self) -> None:
        _check_consistency(self.score, self.verdict, self.flags, self.breakdown,
                           self.hard_flag_gating)


_BUILTIN_KEYS: tuple[str, ...] = tuple(t.key for t in BUILTIN_TERMS)
_SEPARATOR = "_x_"
_MINUS = "minus_"


def _valid_extra_weight(prefix: str) -> bool:
    """Whether ``prefix`` (a key's part before ``_x_``) is ``[minus_]<weight>`` for a
    weight an extra term adding its own key may have."""
    weights = [prefix]
    if prefix.startswith(_MINUS):
        weights.append(prefix[len(_MINUS):])
    return any(
        _IDENTIFIER.fullmatch(w) is not None and w not in BUILTIN_WEIGHT_NAMES and w != "lambda_"
        for w in weights
    )


def _extra_key_names(key: str) -> tuple[str, ...]:
    """The term names an extra term reporting under breakdown key ``key`` may have.

    Empty when no extra term can produce ``key``; one name when the key is
    unambiguous; several when ``_x_`` occurs more than once.
    """
    names: list[str] = []
    start = key.find(_SEPARATOR)
    while start != -1:
        name = key[start + len(_SEPARATOR):]
        if (
            _IDENTIFIER.fullmatch(name) is not None
            and name not in BUILTIN_TERM_NAMES
            and _valid_extra_weight(key[:start])
        ):
            names.append(name)
        start = key.find(_SEPARATOR, start + 1)
    return tuple(names)


def _contribution(key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"breakdown.{key:.80}: must be a finite number, "
                         f"got {type(value).__name__}")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise ValueError(f"breakdown.{key:.80}: must be a finite number, got {value!r:.40}")
    return number


def _ordered_contributions(breakdown: Any) -> tuple[list[float], bool]:
    """The breakdown's values in the scorer's order, and whether that order is certain."""
    if not isinstance(breakdown, dict):
        raise ValueError(f"breakdown: must be an object, got {type(breakdown).__name__}")
    for key in _BUILTIN_KEYS:
        if key not in breakdown:
            raise ValueError(f"breakdown: missing the built-in term key {key!r} "
                             f"(every one of the {len(_BUILTIN_KEYS)} must be present)")
    builtins = [_contribution(key, breakdown[key]) for key in _BUILTIN_KEYS]
    extras: list[tuple[str, float]] = []
    certain = True
    named: dict[str, str] = {}  # term name -> key, for keys with one possible name
    for key, value in breakdown.items():
        if key in _BUILTIN_KEYS:
            continue
        names = _extra_key_names(key) if isinstance(key, str) else ()
        if not names:
            raise ValueError(f"breakdown.{key!s:.80}: not a key any scoring term produces "
                             "(<weight>_x_<term> or minus_<weight>_x_<term>, not built-in)")
        if len(names) == 1:
            if names[0] in named:
                raise ValueError(f"breakdown.{key:.80}: a second key for the term "
                                 f"{names[0]!r} (also {named[names[0]]!r}); term names are "
                                 "unique")
            named[names[0]] = key
        else:
            certain = False
        extras.append((names[0], _contribution(key, value)))
    extras.sort(key=lambda item: item[0])
    return builtins + [value for _, value in extras], certain


def _check_sum(score: float, values: list[float], certain: bool) -> None:
    if certain:
        total = 0.0
        for value in values:
            total += value
        if total == score:
            return
        expected = repr(total)
    else:
        try:
            exact = math.fsum(values)
        except OverflowError:  # an intermediate sum beyond a double: sum at a smaller scale
            exact = math.fsum(v * 2.0**-64 for v in values) * 2.0**64
        scale = len(values) * 2.0**-52
        tolerance = math.fsum(abs(v) * scale for v in values)
        if abs(score - exact) <= tolerance:
            return
        expected = f"{exact!r} within {tolerance:.3g}"
    raise ValueError(f"score: must equal the sum of the breakdown ({expected}), "
                     f"got {score!r}")


def _check_verdict(score: float, verdict: str, flags: Any, gating: bool = True) -> None:
    if gating and flags and verdict != "REJECT":
        raise ValueError(f"verdict: must be REJECT when there are hard flags "
                         f"({len(flags)} recorded) and hard_flag_gating is true, got {verdict}")
    if score < 0 and verdict != "REJECT":
        raise ValueError(f"verdict: must be REJECT for a negative score ({score!r}), "
                         f"got {verdict}")
    if verdict == "REJECT" and not flags and score >= 0:
        raise ValueError(f"verdict: REJECT needs a hard flag or a negative score "
                         f"(no flags, score {score!r}); else it is ACCEPT or MARGINAL")
    if verdict == "REJECT" and not gating and score >= 0:
        raise ValueError(f"verdict: with hard_flag_gating false only a negative score is "
                         f"REJECT (score {score!r}); else it is ACCEPT or MARGINAL")


def _check_consistency(score: float, verdict: str, flags: Any, breakdown: Any,
                       gating: bool = True) -> None:
    values, certain = _ordered_contributions(breakdown)
    _check_sum(score, values, certain)
    _check_verdict(score, verdict, flags, gating)


def _upcast_v1(data: dict[str, Any]) -> dict[str, Any]:
    """Version 1 had no ``hard_flag_gating``: every version-1 scoring gated on flags."""
    return {**data, "hard_flag_gating": True}


BRANCH_SCORED = EventType(
    "fork_score.branch_scored",
    BranchScored,
    schema_version=2,
    upcasters={1: _upcast_v1},
    description="a fork was scored as a branch of a branch set",
)

EVENT_TYPES = (BRANCH_SCORED,)


def branch_set_stream(branch_set_id: str) -> str:
    """The stream a branch set's events are appended to."""
    return f"fork_score.branch_set:{branch_set_id}"
