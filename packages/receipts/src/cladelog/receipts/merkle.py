"""Moved to :mod:`cladelog.core.transparency.merkle` (cladelog-receipts 0.2.0).

These names are re-exported so that code written against cladelog-receipts 0.1
keeps working; new code imports them from core.
"""

from __future__ import annotations

from cladelog.core.transparency.merkle import (
    EMPTY_ROOT,
    HASH_SIZE,
    MerkleTree,
    ProofError,
    leaf_hash,
    node_hash,
    root_from_inclusion,
    root_from_leaves,
    verify_consistency,
    verify_inclusion,
)

__all__ = [
    "EMPTY_ROOT",
    "HASH_SIZE",
    "MerkleTree",
    "ProofError",
    "leaf_hash",
    "node_hash",
    "root_from_inclusion",
    "root_from_leaves",
    "verify_consistency",
    "verify_inclusion",
]
