"""Moved to :mod:`cladelog.core.transparency.note` (cladelog-receipts 0.2.0).

These names are re-exported so that code written against cladelog-receipts 0.1
keeps working; new code imports them from core.
"""

from __future__ import annotations

from cladelog.core.transparency.note import (
    ALG_ECDSA,
    ALG_ED25519,
    MAX_NOTE_CHARS,
    MAX_SIGNATURES,
    Checkpoint,
    EcdsaVerifier,
    Ed25519Signer,
    Ed25519Verifier,
    Note,
    NoteError,
    NoteSignature,
    NoteSigner,
    NoteVerifier,
    ecdsa_verifier,
    ed25519_verify,
    format_checkpoint,
    generate_key,
    key_id,
    open_note,
    parse_checkpoint,
    parse_signer_key,
    parse_verifier_key,
    sign_note,
)

__all__ = [
    "ALG_ECDSA",
    "ALG_ED25519",
    "MAX_NOTE_CHARS",
    "MAX_SIGNATURES",
    "Checkpoint",
    "EcdsaVerifier",
    "Ed25519Signer",
    "Ed25519Verifier",
    "Note",
    "NoteError",
    "NoteSignature",
    "NoteSigner",
    "NoteVerifier",
    "ecdsa_verifier",
    "ed25519_verify",
    "format_checkpoint",
    "generate_key",
    "key_id",
    "open_note",
    "parse_checkpoint",
    "parse_signer_key",
    "parse_verifier_key",
    "sign_note",
]
