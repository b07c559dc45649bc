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
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
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

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        out = attrs.asdict(self)
        out["flags"] = list(self.flags)
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
        if isinstance(value, bool) or not isinstance(value, int | float) \
                or not math.isfinite(value):
            raise BranchSetError(f"scores[{index}]: must be a finite number, got {value!r:.40}")
        values.append(float(value))
    if not values:
        return []
    top = max(values)
    exps = [math.exp((value - top) / temp) for value in values]
    total = math.fsum(exps)  # >= 1: the top score contributes exp(0)
    return [e / total for e in exps]


def _temperature(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value) or value <= 0:
        raise BranchSetError(f"temperature: must be a finite number > 0, got {value!r:.40}")
    return float(value)


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


def branch_set_density(source: Any, branch_set_id: str) -> int:
    """The number of distinct branches recorded under ``branch_set_id`` (0 if none)."""
    branches = branch_sets_state(source)["sets"].get(_set_id(branch_set_id))
    return 0 if branches is None else len(branches)


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
    branches = state["sets"].get(_set_id(branch_set_id)) or {}
    rows = sorted(branches.values(), key=lambda r: (-r["score"], r["branch_id"]))
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
        )
        for index, (row, weight) in enumerate(zip(rows, weights))
    )


def list_branch_sets(source: Any) -> tuple[BranchSetSummary, ...]:
    """One summary per recorded branch set, ordered by branch set id."""
    out = []
    for set_id, branches in sorted(branch_sets_state(source)["sets"].items()):
        if not branches:
            continue
        best = min(branches.values(), key=lambda r: (-r["score"], r["branch_id"]))
        out.append(BranchSetSummary(
            branch_set_id=set_id,
            density=len(branches),
            best_branch_id=best["branch_id"],
            best_score=best["score"],
            parent_roots=tuple(sorted({r["parent_root"] for r in branches.values()})),
            last_position=max(r["position"] for r in branches.values()),
        ))
    return tuple(out)
