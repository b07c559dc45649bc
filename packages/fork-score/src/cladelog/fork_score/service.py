"""Scoring inside a deployment: collected terms, settings, and branch-set recording.

This is fork-score's application layer. :func:`scoring_context` reads what a
deployment adds to the pure :func:`~cladelog.fork_score.score` -- the scoring
terms of every enabled plugin (hook ``fork_score_terms``), the floors and the
weights file of ``[settings.fork-score]`` -- and :func:`record_branch_score`
appends one ``fork_score.branch_scored`` event for a scored fork. Without a
deployment, :class:`ScoringContext` ``()`` is the plain defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
from cladelog.fork_score.deltas import HARD_REGRESSION_FLOOR
from cladelog.fork_score.errors import BranchSetError, ScoringTermError
from cladelog.fork_score.events import (
    BRANCH_SCORED,
    ESTIMATOR_VERSION,
    BranchScored,
    branch_set_stream,
    check_id,
)
from cladelog.fork_score.result import SIGNAL_FLOOR, ScoredFork
from cladelog.fork_score.scoring import score
from cladelog.fork_score.settings import ForkScoreSettings, weights_path
from cladelog.fork_score.terms import ScoringTerm, check_terms
from cladelog.fork_score.weights import WeightSet, weights_from_json

__all__ = [
    "PLUGIN_NAME",
    "ScoringContext",
    "branch_scored_payload",
    "collect_terms",
    "record_branch_score",
    "score_in_context",
    "scoring_context",
]

PLUGIN_NAME = "fork-score"
_TERM_FIELDS = frozenset({"name", "weight_name", "default_weight", "sign", "fn"})


@attrs.frozen
class ScoringContext:
    """What a deployment adds to a scoring: extra terms, floors, default weights file,
    and whether hard flags force REJECT (``hard_flag_gating``)."""

    terms: tuple[ScoringTerm, ...] = ()
    signal_floor: float = SIGNAL_FLOOR
    hard_regression_floor: float = HARD_REGRESSION_FLOOR
    weights_path: Path | None = None
    hard_flag_gating: bool = True

    def load_weights(self, path: str | Path | None = None) -> WeightSet | None:
        """The weight set from ``path``, else from the deployment's weights file, else None."""
        chosen = path if path is not None else self.weights_path
        return None if chosen is None else weights_from_json(chosen, self.terms)


def collect_terms(pluginmanager: Any) -> tuple[ScoringTerm, ...]:
    """Every enabled plugin's scoring terms (hook ``fork_score_terms``), validated together.

    Returns them ordered by name. Raises :class:`ScoringTermError` naming the
    plugin when a hook raises or returns something other than a sequence of
    :class:`ScoringTerm`, and naming the term on a duplicate name or weight.
    A plugin manager without the hook (fork-score not registered) gives ``()``.
    """
    hook = getattr(pluginmanager.hook, "fork_score_terms", None)
    if hook is None:
        return ()
    found: list[ScoringTerm] = []
    for impl in hook.get_hookimpls():
        where = f"plugin {impl.plugin_name}: fork_score_terms"
        try:
            result = impl.function()
        except Exception as exc:  # a plugin bug must not escape as a traceback
            raise ScoringTermError(f"{where} raised {type(exc).__name__}: {exc}"[:200]) from exc
        if result is None:
            continue
        if isinstance(result, str | bytes | Mapping) or not hasattr(result, "__iter__"):
            raise ScoringTermError(f"{where}: must return a sequence of ScoringTerm")
        for index, term in enumerate(result):
            if isinstance(term, Mapping) and set(term) == _TERM_FIELDS:
                term = ScoringTerm(**term)  # the import-free form (see terms.py)
            if not isinstance(term, ScoringTerm):
                raise ScoringTermError(
                    f"{where}[{index}]: must be a ScoringTerm, got {type(term).__name__}"
                )
            found.append(term)
    return check_terms(found)


def scoring_context(deployment: Any) -> ScoringContext:
    """The scoring context of a deployment that enables fork-score.

    Raises :class:`~cladelog.core.errors.ConfigError` if fork-score is not
    enabled there, and :class:`ScoringTermError` for bad terms.
    """
    settings: ForkScoreSettings = deployment.settings(PLUGIN_NAME)
    return ScoringContext(
        terms=collect_terms(deployment.pm),
        signal_floor=settings.signal_floor,
        hard_regression_floor=settings.hard_regression_floor,
        weights_path=weights_path(settings, getattr(deployment.config, "path", None)),
        hard_flag_gating=settings.hard_flag_gating,
    )


def score_in_context(
    context: ScoringContext,
    parent: Mapping[str, Any],
    child: Mapping[str, Any],
    weights: WeightSet | Mapping[str, Any] | None = None,
    **scalars: Any,
) -> ScoredFork:
    """:func:`~cladelog.fork_score.score` with the context's terms, floors and gating.

    ``weights=None`` takes the context's weights file, if it has one.
    """
    if weights is None:
        weights = context.load_weights()
    return score(
        parent,
        child,
        weights,
        extra_terms=context.terms,
        signal_floor=context.signal_floor,
        hard_regression_floor=context.hard_regression_floor,
        hard_flag_gating=context.hard_flag_gating,
        **scalars,
    )


def branch_scored_payload(
    result: ScoredFork,
    *,
    branch_set_id: str,
    branch_id: str,
    parent_root: str,
    child_root: str | None = None,
) -> BranchScored:
    """The ``fork_score.branch_scored`` payload for a scored fork.

    Raises :class:`BranchSetError` naming the id that is malformed.
    """
    ids = {"branch_set_id": branch_set_id, "branch_id": branch_id, "parent_root": parent_root}
    if child_root is not None:
        ids["child_root"] = child_root
    for name, value in ids.items():
        try:
            check_id(value, name)
        except ValueError as exc:
            raise BranchSetError(str(exc)) from None
    return BranchScored(
        branch_set_id=branch_set_id,
        branch_id=branch_id,
        parent_root=parent_root,
        child_root=child_root,
        score=result.score,
        verdict=str(result.verdict),
        flags=list(result.flags),
        breakdown=dict(result.breakdown),
        weights_id=result.weights_id,
        estimator_version=ESTIMATOR_VERSION,
        hard_flag_gating=result.hard_flag_gating,
    )


def record_branch_score(
    deployment: Any,
    result: ScoredFork,
    *,
    branch_set_id: str,
    branch_id: str,
    parent_root: str,
    child_root: str | None = None,
) -> Any:
    """Append one ``fork_score.branch_scored`` event; return the recorded event.

    The event goes to the stream ``fork_score.branch_set:<branch_set_id>``; its
    ``recorded_at`` (given by the log) is the time of the scoring.
    """
    from cladelog.core import NewEvent

    payload = branch_scored_payload(result, branch_set_id=branch_set_id, branch_id=branch_id,
                                    parent_root=parent_root, child_root=child_root)
    event = NewEvent(branch_set_stream(branch_set_id), BRANCH_SCORED.name, payload)
    return deployment.append([event])[-1]
