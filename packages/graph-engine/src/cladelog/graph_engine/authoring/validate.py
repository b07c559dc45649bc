"""Static checks of a concept tree (SPEC §1.14, ``validate``): the four passes.

The validator lives in :mod:`cladelog.graph_engine.tree_checks`, below the authoring
modules, so that :func:`cladelog.graph_engine.validate_tree` runs it without importing
them; the reference helpers live in :mod:`cladelog.graph_engine.refs`. This module keeps
the SPEC's name for both.
"""

from __future__ import annotations

from ..refs import RefKey, each_concept, ref_key_of, refs_of, template_keys
from ..tree_checks import (
    DEFAULT_COLLECTION_KEYS,
    OPTION_ALIASES,
    ConceptValidationError,
    Finding,
    ValidationResult,
    validate_concept_tree,
    validate_or_throw,
)

__all__ = [
    "DEFAULT_COLLECTION_KEYS",
    "OPTION_ALIASES",
    "ConceptValidationError",
    "Finding",
    "RefKey",
    "ValidationResult",
    "each_concept",
    "ref_key_of",
    "refs_of",
    "template_keys",
    "validate_concept_tree",
    "validate_or_throw",
]
