"""Moved to :mod:`cladelog.core.transparency.proof` (cladelog-receipts 0.2.0).

These names are re-exported so that code written against cladelog-receipts 0.1
keeps working; new code imports them from core.
"""

from __future__ import annotations

from cladelog.core.transparency.proof import (
    CONSISTENCY_HEADER,
    MAX_PROOF_HASHES,
    TLOG_PROOF_HEADER,
    ConsistencyProofFile,
    ProofFileError,
    TlogProof,
    format_consistency_proof,
    format_tlog_proof,
    parse_consistency_proof,
    parse_tlog_proof,
)

__all__ = [
    "CONSISTENCY_HEADER",
    "MAX_PROOF_HASHES",
    "TLOG_PROOF_HEADER",
    "ConsistencyProofFile",
    "ProofFileError",
    "TlogProof",
    "format_consistency_proof",
    "format_tlog_proof",
    "parse_consistency_proof",
    "parse_tlog_proof",
]
