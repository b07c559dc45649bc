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

from ..refs import RefKey, each_concept, iter_concepts, ref_key_of, refs_of, template_keys
from .cache import (
    CACHE_DELETED,
    CACHE_SET,
    MemoryCache,
    MethodCache,
    RecordingCache,
)
from .errors import AuthoringError, MemoStabilityError
from .eventlog import (
    LIBRARIES,
    LIBRARY_EVENT_TYPES,
    LibraryLog,
    library_records,
    library_state,
    library_stream,
)
from .loop import (
    SegmentView,
    asynthesize,
    default_rollup,
    loop_concept_tree,
    loop_provider_kind,
    make_decompose_providers,
    reactive_loop_concept_tree,
    synthesize,
)
from .master_loop import (
    DRIFTED,
    SOLVED,
    DriftResult,
    ForgeContext,
    Forged,
    MasterLoop,
    MasterLoopStats,
    SolveResult,
    class_id,
    signature_key,
)
from .mdl import (
    Alphabet,
    GateVerdict,
    MdlGain,
    RankedChain,
    alphabet_size,
    compose_gates,
    concept_count_of,
    corpus_bits,
    make_mdl_gate,
    mdl_gain,
    rank_candidates,
    run_gate,
    schema_bits,
    symbols_of,
)
from .memo_stability import (
    MemoChange,
    MemoDiff,
    aassert_memo_stable,
    assert_memo_stable,
    memo_diff,
    memo_snapshot,
    memo_surface_keys,
    memo_surface_paths,
)
from .mount import (
    MountController,
    MountDecision,
    MountState,
    MountThresholds,
    WidenResult,
    classify,
)
from .projection import (
    LibraryState,
    apply_record,
    apply_record_in_place,
    empty_library,
    fold_records,
    library_of,
)
from .recall import (
    RecallHit,
    RecallIndex,
    Verdict,
    VerifiedCandidate,
    cosine,
    recall_and_verify,
    token_embedding,
    verify,
)
from .validate import (
    DEFAULT_COLLECTION_KEYS,
    ConceptValidationError,
    Finding,
    ValidationResult,
    validate_concept_tree,
    validate_or_throw,
)

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
