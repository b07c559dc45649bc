"""Read API over recorded branch sets (the ``fork_score.branch_sets`` projection).

Every function takes a *source*: a :class:`~cladelog.core.Deployment` (or any
object with ``state(name)``, such as the test fixture ``cladelog_env``), the
mapping of all projection states (``deployment.states()``), or the state of
``fork_score.branch_sets`` itself. Nothing here writes.

* :func:`branch_set_density` -- how many distinct branches a set has (0 for a
  set never recorded);
* :func:`rank_branches` -- the set's branches, best score first, each with its
  softmax weight at a temperature;
* :func:`list_branch_sets` -- one summary per recorded set, by id;
* :func:`softmax_weights` -- the numerically stable softmax used for the weights.

Ranking order: score descending, ties broken by ``branch_id`` ascending; ranks
are 1, 2, 3... in that order. Weights cover every recorded branch, REJECTed
ones included (their score already carries their penalties); they add up to 1.

A state given by hand is checked as it is read: a set that is not an object, or
a row with a missing or wrongly typed member, raises :class:`BranchSetError`
naming it (``source.sets.<set>.<branch>.score: ...``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
from cladelog.core.fields import short_text
from cladelog.fork_score.errors import BranchSetError
from cladelog.fork_score.settings import DEFAULT_SOFTMAX_TEMPERATURE

__all__ = [
    "BRANCH_SETS_PROJECTION",
    "BranchSetSummary",
    "RankedBranch",
    "branch_set_density",
    "branch_sets_state",
    "default_temperature",
    "list_branch_sets",
    "rank_branches",
    "softmax_weights",
]

BRANCH_SETS_PROJECTION = "fork_score.branch_sets"


@attrs.frozen
class RankedBranch:
    """One branch of a set, as :func:`rank_branches` returns it."""

    rank: int
    branch_id: str
    score: float
    weight: float
    verdict: str
    flags: tuple[str, ...]
    parent_root: str
    child_root: str | None
    weights_id: str
    estimator_version: str
    position: int
    recorded_at: str
    times_scored: int
    breakdown: Mapping[str, float] = attrs.field(factory=dict)
    hard_flag_gating: bool = True

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        out = attrs.asdict(self)
        out["flags"] = list(self.flags)
        out["breakdown"] = dict(self.breakdown)
        return out


@attrs.frozen
class BranchSetSummary:
    """One recorded branch set, as :func:`list_branch_sets` returns it."""

    branch_set_id: str
    density: int
    best_branch_id: str
    best_score: float
    parent_roots: tuple[str, ...]
    last_position: int

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        out = attrs.asdict(self)
        out["parent_roots"] = list(self.parent_roots)
        return out


def softmax_weights(scores: Sequence[float], temperature: float) -> list[float]:
    """``exp(s_i / T) / sum_j exp(s_j / T)``, computed stably.

    The largest score is subtracted first, so no exponent is positive and
    nothing overflows however large the scores or small the temperature; the
    weights add up to 1 (up to rounding). An empty sequence gives ``[]``.
    Raises :class:`BranchSetError` for a temperature that is not a finite
    number ``> 0`` or a score that is not finite.
    """
    temp = _temperature(temperature)
    values = []
    for index, value in enumerate(scores):
        number = _finite_float(value)
        if number is None:
            raise BranchSetError(f"scores[{index}]: must be a finite number, got {value!r:.40}")
        values.append(number)
    if not values:
        return []
    top = max(values)
    exps = [math.exp((value - top) / temp) for value in values]
    total = math.fsum(exps)  # >= 1: the top score contributes exp(0)
    return [e / total for e in exps]


def _finite_float(value: Any) -> float | None:
    """``value`` as a finite float, or None if it is not a finite number (bool is not)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int too large for a double
        return None
    return number if math.isfinite(number) else None


def _temperature(value: Any) -> float:
    number = _finite_float(value)
    if number is None or number <= 0:
        raise BranchSetError(f"temperature: must be a finite number > 0, got {value!r:.40}")
    return number


def branch_sets_state(source: Any) -> Mapping[str, Any]:
    """The ``fork_score.branch_sets`` state held or produced by ``source``."""
    if isinstance(source, Mapping):
        if BRANCH_SETS_PROJECTION in source:
            source = source[BRANCH_SETS_PROJECTION]
        if isinstance(source, Mapping) and isinstance(source.get("sets"), Mapping):
            return source
        raise BranchSetError(
            "source: not a fork_score.branch_sets state nor a mapping of projection states"
        )
    state_of = getattr(source, "state", None)
    if not callable(state_of):
        raise BranchSetError(
            f"source: expected a deployment or a projection state, got {type(source).__name__}"
        )
    return branch_sets_state(state_of(BRANCH_SETS_PROJECTION))


def _set_id(branch_set_id: Any) -> str:
    if not isinstance(branch_set_id, str):
        raise BranchSetError(
            f"branch_set_id: must be a string, got {type(branch_set_id).__name__}"
        )
    return branch_set_id


def default_temperature(source: Any) -> float:
    """The ``softmax_temperature`` setting of a deployment source, else the default.

    A source with a ``deployment`` attribute (the ``cladelog_env`` fixture) is
    asked through it.
    """
    source = getattr(source, "deployment", source)
    settings_of = getattr(source, "settings", None)
    if callable(settings_of):
        try:
            settings = settings_of("fork-score")
        except Exception:  # not a deployment with fork-score enabled: use the default
            return DEFAULT_SOFTMAX_TEMPERATURE
        value = getattr(settings, "softmax_temperature", DEFAULT_SOFTMAX_TEMPERATURE)
        return float(value)
    return DEFAULT_SOFTMAX_TEMPERATURE


#: Members of a ``fork_score.branch_sets`` row and the JSON types they must have.
_ROW_TYPES: Mapping[str, tuple[type, ...]] = {
    "branch_id": (str,),
    "parent_root": (str,),
    "child_root": (str, type(None)),
    "score": (int, float),
    "verdict": (str,),
    "flags": (list, tuple),
    "weights_id": (str,),
    "estimator_version": (str,),
    "recorded_at": (str,),
    "position": (int,),
    "times_scored": (int,),
}


def _rows(sets: Mapping[Any, Any], set_id: str) -> list[Mapping[str, Any]]:
    """The rows of one set, checked (a state given by hand may be malformed)."""
    branches = sets.get(set_id)
    if branches is None:
        return []
    path = f"source.sets.{short_text(set_id)}"
    if not isinstance(branches, Mapping):
        raise BranchSetError(f"{path}: must be an object of rows, got {type(branches).__name__}")
    rows = []
    for branch_id, row in branches.items():
        where = f"{path}.{short_text(str(branch_id))}"
        if not isinstance(row, Mapping):
            raise BranchSetError(f"{where}: must be an object, got {type(row).__name__}")
        for member, types in _ROW_TYPES.items():
            if member not in row:
                raise BranchSetError(f"{where}: missing member {member!r}")
            value = row[member]
            if isinstance(value, bool) or not isinstance(value, types):
                raise BranchSetError(f"{where}.{member}: wrong type {type(value).__name__}")
        if _finite_float(row["score"]) is None:
            raise BranchSetError(f"{where}.score: must be finite")
        if not all(isinstance(flag, str) for flag in row["flags"]):
            raise BranchSetError(f"{where}.flags: must be a list of strings")
        breakdown = row.get("breakdown", {})
        if not isinstance(breakdown, Mapping) or not all(
            isinstance(k, str) and _finite_float(v) is not None for k, v in breakdown.items()
        ):
            raise BranchSetError(f"{where}.breakdown: must map term keys to finite numbers")
        if row.get("hard_flag_gating", True).__class__ is not bool:
            raise BranchSetError(f"{where}.hard_flag_gating: must be true or false")
        rows.append(row)
    return rows


def _set_ids(sets: Mapping[Any, Any]) -> list[str]:
    ids = list(sets)
    for set_id in ids:
        if not isinstance(set_id, str):
            raise BranchSetError(f"source.sets: key {set_id!r:.40} is not a string")
    return sorted(ids)


def branch_set_density(source: Any, branch_set_id: str) -> int:
    """The number of distinct branches recorded under ``branch_set_id`` (0 if none)."""
    return len(_rows(branch_sets_state(source)["sets"], _set_id(branch_set_id)))


def rank_branches(
    source: Any, branch_set_id: str, temperature: float | None = None
) -> tuple[RankedBranch, ...]:
    """The branches of a set, best first, with softmax weights at ``temperature``.

    ``temperature=None`` uses the deployment's ``softmax_temperature`` setting
    when ``source`` is a deployment, else :data:`DEFAULT_SOFTMAX_TEMPERATURE`.
    A set never recorded gives ``()``.
    """
    state = branch_sets_state(source)
    temp = _temperature(default_temperature(source) if temperature is None else temperature)
    rows = sorted(_rows(state["sets"], _set_id(branch_set_id)),
                  key=lambda r: (-r["score"], r["branch_id"]))
    weights = softmax_weights([r["score"] for r in rows], temp)
    return tuple(
        RankedBranch(
            rank=index + 1,
            branch_id=row["branch_id"],
            score=row["score"],
            weight=weight,
            verdict=row["verdict"],
            flags=tuple(row["flags"]),
            parent_root=row["parent_root"],
            child_root=row["child_root"],
            weights_id=row["weights_id"],
            estimator_version=row["estimator_version"],
            position=row["position"],
            recorded_at=row["recorded_at"],
            times_scored=row["times_scored"],
            breakdown=dict(row.get("breakdown", {})),
            hard_flag_gating=row.get("hard_flag_gating", True),
        )
        for index, (row, weight) in enumerate(zip(rows, weights))
    )


def list_branch_sets(source: Any) -> tuple[BranchSetSummary, ...]:
    """One summary per recorded branch set, ordered by branch set id."""
    sets = branch_sets_state(source)["sets"]
    out = []
    for set_id in _set_ids(sets):
        rows = _rows(sets, set_id)
        if not rows:
            continue
        best = min(rows, key=lambda r: (-r["score"], r["branch_id"]))
        out.append(BranchSetSummary(
            branch_set_id=set_id,
            density=len(rows),
            best_branch_id=best["branch_id"],
            best_score=best["score"],
            parent_roots=tuple(sorted({r["parent_root"] for r in rows})),
            last_position=max(r["position"] for r in rows),
        ))
    return tuple(out)
