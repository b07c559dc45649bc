"""cladelog.graph_engine.authoring: authoring and learning modules (SPEC §1.14).

Each module has one job; this package re-exports their public API:

- :mod:`.validate` — static checks of a concept tree (the four passes, which live in
  :mod:`cladelog.graph_engine.tree_checks`; the reference helpers are
  :mod:`cladelog.graph_engine.refs`'s);
- :mod:`.loop` — the decompose-and-synthesize loop;
- :mod:`.mdl` — the bits-based MDL admission objective and gates;
- :mod:`.memo_stability` — the memo-surface-preservation gate;
- :mod:`.mount` — the mount-regime policy;
- :mod:`.recall` — fuzzy recall plus typed verification of methods;
- :mod:`.master_loop` — the cost-ordered solve ladder, its caches and records;
- :mod:`.projection` — the pure fold of the master loop's records;
- :mod:`.eventlog` — those records as cladelog events, and the library rebuilt from the log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cladelog.core import exports_from_source, lazy_exports

from ..refs import RefKey, each_concept, iter_concepts, ref_key_of, refs_of, template_keys

# the names below are imported on first use (PEP 562): the plugin imports .eventlog at
# start-up, which must not bring in the loops (asyncio), the MDL gate or recall
if TYPE_CHECKING:
    from .cache import CACHE_DELETED as CACHE_DELETED
    from .cache import CACHE_SET as CACHE_SET
    from .cache import MemoryCache as MemoryCache
    from .cache import MethodCache as MethodCache
    from .cache import RecordingCache as RecordingCache
    from .errors import AuthoringError as AuthoringError
    from .errors import MemoStabilityError as MemoStabilityError
    from .eventlog import LIBRARIES as LIBRARIES
    from .eventlog import LIBRARY_EVENT_TYPES as LIBRARY_EVENT_TYPES
    from .eventlog import LibraryLog as LibraryLog
    from .eventlog import library_records as library_records
    from .eventlog import library_state as library_state
    from .eventlog import library_stream as library_stream
    from .loop import SegmentView as SegmentView
    from .loop import asynthesize as asynthesize
    from .loop import default_rollup as default_rollup
    from .loop import loop_concept_tree as loop_concept_tree
    from .loop import loop_provider_kind as loop_provider_kind
    from .loop import make_decompose_providers as make_decompose_providers
    from .loop import reactive_loop_concept_tree as reactive_loop_concept_tree
    from .loop import synthesize as synthesize
    from .master_loop import DRIFTED as DRIFTED
    from .master_loop import SOLVED as SOLVED
    from .master_loop import DriftResult as DriftResult
    from .master_loop import ForgeContext as ForgeContext
    from .master_loop import Forged as Forged
    from .master_loop import MasterLoop as MasterLoop
    from .master_loop import MasterLoopStats as MasterLoopStats
    from .master_loop import SolveResult as SolveResult
    from .master_loop import class_id as class_id
    from .master_loop import signature_key as signature_key
    from .mdl import Alphabet as Alphabet
    from .mdl import GateVerdict as GateVerdict
    from .mdl import MdlGain as MdlGain
    from .mdl import RankedChain as RankedChain
    from .mdl import alphabet_size as alphabet_size
    from .mdl import compose_gates as compose_gates
    from .mdl import concept_count_of as concept_count_of
    from .mdl import corpus_bits as corpus_bits
    from .mdl import make_mdl_gate as make_mdl_gate
    from .mdl import mdl_gain as mdl_gain
    from .mdl import rank_candidates as rank_candidates
    from .mdl import run_gate as run_gate
    from .mdl import schema_bits as schema_bits
    from .mdl import symbols_of as symbols_of
    from .memo_stability import MemoChange as MemoChange
    from .memo_stability import MemoDiff as MemoDiff
    from .memo_stability import aassert_memo_stable as aassert_memo_stable
    from .memo_stability import assert_memo_stable as assert_memo_stable
    from .memo_stability import memo_diff as memo_diff
    from .memo_stability import memo_snapshot as memo_snapshot
    from .memo_stability import memo_surface_keys as memo_surface_keys
    from .memo_stability import memo_surface_paths as memo_surface_paths
    from .mount import MountController as MountController
    from .mount import MountDecision as MountDecision
    from .mount import MountState as MountState
    from .mount import MountThresholds as MountThresholds
    from .mount import WidenResult as WidenResult
    from .mount import classify as classify
    from .projection import LibraryState as LibraryState
    from .projection import apply_record as apply_record
    from .projection import apply_record_in_place as apply_record_in_place
    from .projection import empty_library as empty_library
    from .projection import fold_records as fold_records
    from .projection import library_of as library_of
    from .recall import RecallHit as RecallHit
    from .recall import RecallIndex as RecallIndex
    from .recall import Verdict as Verdict
    from .recall import VerifiedCandidate as VerifiedCandidate
    from .recall import cosine as cosine
    from .recall import recall_and_verify as recall_and_verify
    from .recall import token_embedding as token_embedding
    from .recall import verify as verify
    from .validate import DEFAULT_COLLECTION_KEYS as DEFAULT_COLLECTION_KEYS
    from .validate import ConceptValidationError as ConceptValidationError
    from .validate import Finding as Finding
    from .validate import ValidationResult as ValidationResult
    from .validate import validate_concept_tree as validate_concept_tree
    from .validate import validate_or_throw as validate_or_throw

__all__ = [
    "CACHE_DELETED",
    "CACHE_SET",
    "DEFAULT_COLLECTION_KEYS",
    "DRIFTED",
    "LIBRARIES",
    "LIBRARY_EVENT_TYPES",
    "SOLVED",
    "Alphabet",
    "AuthoringError",
    "ConceptValidationError",
    "DriftResult",
    "Finding",
    "ForgeContext",
    "Forged",
    "GateVerdict",
    "LibraryLog",
    "LibraryState",
    "MasterLoop",
    "MasterLoopStats",
    "MdlGain",
    "MemoChange",
    "MemoDiff",
    "MemoStabilityError",
    "MemoryCache",
    "MethodCache",
    "MountController",
    "MountDecision",
    "MountState",
    "MountThresholds",
    "RankedChain",
    "RecallHit",
    "RecallIndex",
    "RecordingCache",
    "RefKey",
    "SegmentView",
    "SolveResult",
    "ValidationResult",
    "Verdict",
    "VerifiedCandidate",
    "WidenResult",
    "aassert_memo_stable",
    "alphabet_size",
    "apply_record",
    "apply_record_in_place",
    "assert_memo_stable",
    "asynthesize",
    "class_id",
    "classify",
    "compose_gates",
    "concept_count_of",
    "corpus_bits",
    "cosine",
    "default_rollup",
    "each_concept",
    "empty_library",
    "fold_records",
    "iter_concepts",
    "library_of",
    "library_records",
    "library_state",
    "library_stream",
    "loop_concept_tree",
    "loop_provider_kind",
    "make_decompose_providers",
    "make_mdl_gate",
    "mdl_gain",
    "memo_diff",
    "memo_snapshot",
    "memo_surface_keys",
    "memo_surface_paths",
    "rank_candidates",
    "reactive_loop_concept_tree",
    "recall_and_verify",
    "ref_key_of",
    "refs_of",
    "run_gate",
    "schema_bits",
    "signature_key",
    "symbols_of",
    "synthesize",
    "template_keys",
    "token_embedding",
    "validate_concept_tree",
    "validate_or_throw",
    "verify",
]

__getattr__, __dir__ = lazy_exports(__name__, exports_from_source(__file__), globals())
