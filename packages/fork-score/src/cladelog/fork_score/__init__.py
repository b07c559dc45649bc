"""cladelog-fork-score: ForkScore over (parent, child) battery results.

The public API lives here; names are loaded on first use so that importing the
package (for example by the CLI) stays cheap::

    from cladelog.fork_score import score
    result = score(parent_doc, child_doc, capital_delta=0.2)
    result.verdict, result.score, result.breakdown

Branch sets (recorded with ``fork-score score --branch-set``) are read with
:func:`branch_set_density`, :func:`rank_branches` and :func:`list_branch_sets`;
:func:`scoring_context` and :func:`record_branch_score` score and record inside a
deployment. See :mod:`cladelog.fork_score.scoring` for the formula,
:mod:`cladelog.fork_score.batteries` for the input form,
:mod:`cladelog.fork_score.deltas` for deltas and hard flags, and
:mod:`cladelog.fork_score.terms` for the extra-term contract.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cladelog.core import lazy_exports

__version__ = "0.1.0"

if TYPE_CHECKING:
    from cladelog.fork_score.batteries import BATTERIES, EFFICIENCY_FAMILIES, RATE_KEYS
    from cladelog.fork_score.branch_sets import (
        BranchSetSummary,
        RankedBranch,
        branch_set_density,
        list_branch_sets,
        rank_branches,
        softmax_weights,
    )
    from cladelog.fork_score.deltas import (
        EFFICIENCY_DAMPING,
        HARD_REGRESSION_FLOOR,
        INFINITE_BONUS_CAP,
        NEG_INF_REGRESSION,
    )
    from cladelog.fork_score.errors import (
        BatteryInputError,
        BranchSetError,
        ForkScoreError,
        JsonFileError,
        ScalarInputError,
        ScoringTermError,
        WeightsError,
    )
    from cladelog.fork_score.events import ESTIMATOR_VERSION, BranchScored
    from cladelog.fork_score.jsonio import battery_result_schema
    from cladelog.fork_score.result import SIGNAL_FLOOR, ScoredFork, Verdict
    from cladelog.fork_score.scoring import SCALAR_DEFAULTS, score
    from cladelog.fork_score.service import (
        ScoringContext,
        collect_terms,
        record_branch_score,
        scoring_context,
    )
    from cladelog.fork_score.settings import DEFAULT_SOFTMAX_TEMPERATURE, ForkScoreSettings
    from cladelog.fork_score.terms import ScoringTerm
    from cladelog.fork_score.weights import (
        DEFAULT_WEIGHTS,
        WeightSet,
        default_weights,
        load_weights,
        weights_from_json,
        weights_id,
    )

_EXPORTS: dict[str, str] = {
    "BATTERIES": "batteries",
    "EFFICIENCY_FAMILIES": "batteries",
    "RATE_KEYS": "batteries",
    "BranchSetSummary": "branch_sets",
    "RankedBranch": "branch_sets",
    "branch_set_density": "branch_sets",
    "list_branch_sets": "branch_sets",
    "rank_branches": "branch_sets",
    "softmax_weights": "branch_sets",
    "ESTIMATOR_VERSION": "events",
    "BranchScored": "events",
    "ScoringContext": "service",
    "collect_terms": "service",
    "record_branch_score": "service",
    "scoring_context": "service",
    "DEFAULT_SOFTMAX_TEMPERATURE": "settings",
    "ForkScoreSettings": "settings",
    "EFFICIENCY_DAMPING": "deltas",
    "HARD_REGRESSION_FLOOR": "deltas",
    "INFINITE_BONUS_CAP": "deltas",
    "NEG_INF_REGRESSION": "deltas",
    "BatteryInputError": "errors",
    "BranchSetError": "errors",
    "ForkScoreError": "errors",
    "JsonFileError": "errors",
    "ScalarInputError": "errors",
    "ScoringTermError": "errors",
    "WeightsError": "errors",
    "battery_result_schema": "jsonio",
    "SIGNAL_FLOOR": "result",
    "ScoredFork": "result",
    "Verdict": "result",
    "SCALAR_DEFAULTS": "scoring",
    "score": "scoring",
    "ScoringTerm": "terms",
    "DEFAULT_WEIGHTS": "weights",
    "WeightSet": "weights",
    "default_weights": "weights",
    "load_weights": "weights",
    "weights_from_json": "weights",
    "weights_id": "weights",
}

__all__ = [
    "BATTERIES",
    "DEFAULT_SOFTMAX_TEMPERATURE",
    "DEFAULT_WEIGHTS",
    "EFFICIENCY_DAMPING",
    "EFFICIENCY_FAMILIES",
    "ESTIMATOR_VERSION",
    "HARD_REGRESSION_FLOOR",
    "INFINITE_BONUS_CAP",
    "NEG_INF_REGRESSION",
    "RATE_KEYS",
    "SCALAR_DEFAULTS",
    "SIGNAL_FLOOR",
    "BatteryInputError",
    "BranchScored",
    "BranchSetError",
    "BranchSetSummary",
    "ForkScoreError",
    "ForkScoreSettings",
    "JsonFileError",
    "RankedBranch",
    "ScalarInputError",
    "ScoredFork",
    "ScoringContext",
    "ScoringTerm",
    "ScoringTermError",
    "Verdict",
    "WeightSet",
    "WeightsError",
    "__version__",
    "battery_result_schema",
    "branch_set_density",
    "collect_terms",
    "default_weights",
    "list_branch_sets",
    "load_weights",
    "rank_branches",
    "record_branch_score",
    "score",
    "scoring_context",
    "softmax_weights",
    "weights_from_json",
    "weights_id",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
