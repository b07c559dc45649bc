"""The event types fork-score writes (public, versioned contracts).

``fork_score.branch_scored`` (schema version 1) -- one fork was scored as a
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
=====================  ===============  ==========================================

Ids (``branch_set_id``, ``branch_id``, ``parent_root``, ``child_root``) are 1 to
128 printable characters, not all blank. The time of a scoring is the event's
own ``recorded_at`` (set by the log when the event is appended, and covered by
the hash chain); the payload carries no clock reading of its own, so
projections never consult a clock.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
from cladelog.core.registry import EventType

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


BRANCH_SCORED = EventType(
    "fork_score.branch_scored",
    BranchScored,
    schema_version=1,
    description="a fork was scored as a branch of a branch set",
)

EVENT_TYPES = (BRANCH_SCORED,)


def branch_set_stream(branch_set_id: str) -> str:
    """The stream a branch set's events are appended to."""
    return f"fork_score.branch_set:{branch_set_id}"
