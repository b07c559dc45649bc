"""Moved to :mod:`cladelog.core.transparency.dsse` (cladelog-receipts 0.2.0).

These names are re-exported so that code written against cladelog-receipts 0.1
keeps working; new code imports them from core.
"""

from __future__ import annotations

from cladelog.core.transparency.dsse import (
    PAYLOAD_TYPE_INTOTO,
    STATEMENT_TYPE_V1,
    EnvelopeError,
    Signer,
    VerifiedBytes,
    VerifiedPayload,
    Verifier,
    make_statement,
    pae,
    sign_envelope,
    verify_envelope,
    verify_envelope_bytes,
)

__all__ = [
    "PAYLOAD_TYPE_INTOTO",
    "STATEMENT_TYPE_V1",
    "EnvelopeError",
    "Signer",
    "VerifiedBytes",
    "VerifiedPayload",
    "Verifier",
    "make_statement",
    "pae",
    "sign_envelope",
    "verify_envelope",
    "verify_envelope_bytes",
]
