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

from cladelog.core import exports_from_source, lazy_exports

__version__ = "0.1.0"

if TYPE_CHECKING:  # the export list, written once: one public name a line
    from .batteries import BATTERIES as BATTERIES
    from .batteries import EFFICIENCY_FAMILIES as EFFICIENCY_FAMILIES
    from .batteries import RATE_KEYS as RATE_KEYS
    from .branch_sets import BranchSetSummary as BranchSetSummary
    from .branch_sets import RankedBranch as RankedBranch
    from .branch_sets import branch_set_density as branch_set_density
    from .branch_sets import list_branch_sets as list_branch_sets
    from .branch_sets import rank_branches as rank_branches
    from .branch_sets import softmax_weights as softmax_weights
    from .deltas import EFFICIENCY_DAMPING as EFFICIENCY_DAMPING
    from .deltas import HARD_REGRESSION_FLOOR as HARD_REGRESSION_FLOOR
    from .deltas import INFINITE_BONUS_CAP as INFINITE_BONUS_CAP
    from .deltas import NEG_INF_REGRESSION as NEG_INF_REGRESSION
    from .errors import BatteryInputError as BatteryInputError
    from .errors import BranchSetError as BranchSetError
    from .errors import ForkScoreError as ForkScoreError
    from .errors import JsonFileError as JsonFileError
    from .errors import ScalarInputError as ScalarInputError
    from .errors import ScoringTermError as ScoringTermError
    from .errors import WeightsError as WeightsError
    from .events import ESTIMATOR_VERSION as ESTIMATOR_VERSION
    from .events import BranchScored as BranchScored
    from .jsonio import battery_result_schema as battery_result_schema
    from .result import SIGNAL_FLOOR as SIGNAL_FLOOR
    from .result import ScoredFork as ScoredFork
    from .result import Verdict as Verdict
    from .scoring import SCALAR_DEFAULTS as SCALAR_DEFAULTS
    from .scoring import score as score
    from .service import ScoringContext as ScoringContext
    from .service import collect_terms as collect_terms
    from .service import record_branch_score as record_branch_score
    from .service import scoring_context as scoring_context
    from .settings import DEFAULT_SOFTMAX_TEMPERATURE as DEFAULT_SOFTMAX_TEMPERATURE
    from .settings import ForkScoreSettings as ForkScoreSettings
    from .terms import BUILTIN_TERMS as BUILTIN_TERMS
    from .terms import ScoringTerm as ScoringTerm
    from .terms import term_label as term_label
    from .weights import DEFAULT_WEIGHTS as DEFAULT_WEIGHTS
    from .weights import WeightSet as WeightSet
    from .weights import default_weights as default_weights
    from .weights import load_weights as load_weights
    from .weights import weights_from_json as weights_from_json
    from .weights import weights_id as weights_id


_EXPORTS = exports_from_source(__file__)
__all__ = [*_EXPORTS, "__version__"]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
