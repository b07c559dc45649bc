"""Transparency-log formats and their pure verifiers: Merkle trees, signed notes,
checkpoints, cosignatures, proof files, DSSE envelopes and in-toto Statements.

Every module here is pure (no store, no clock, no network) and follows a public
standard, so other people's tools read our files and a third party can lift a
verifier out:

==========================  ===========================================================
module                      what
==========================  ===========================================================
:mod:`.merkle`              RFC 9162 hashing, inclusion/consistency proofs and verifiers
:mod:`.note`                C2SP signed notes, Ed25519 keys in the signed-note format,
                            ``tlog-checkpoint`` bodies, ``cosignature/v1`` (witnesses)
:mod:`.proof`               ``c2sp.org/tlog-proof@v1`` files and the consistency-proof
                            file ``cladelog/tlog-consistency-proof@v2``
:mod:`.dsse`                DSSE v1 envelopes (any payload type) and in-toto Statement v1
:mod:`.verify`              checkpoint, proof-file and witness-quorum verification
==========================  ===========================================================

A quick tour for a plugin that signs its own records::

    from cladelog.core import transparency as t

    skey, vkey = t.generate_key("example.org/validator-1")   # private, public key text
    signer, verifier = t.parse_signer_key(skey), t.parse_verifier_key(vkey)

    note = t.sign_note("hello\\n", signer)                  # a C2SP signed note
    t.open_note(note, [verifier]).text                     # -> "hello\\n"

    env = t.sign_envelope(b"...", "application/vnd.example+json", signer.sign,
                          signer.key_ref)                  # DSSE, any payload type
    t.verify_envelope_bytes(env, t.key_verifiers([verifier]),
                            payload_type="application/vnd.example+json").payload

    env = t.sign_statement([{"name": "x", "digest": {"sha256": "ab" * 32}}],
                           "https://example.org/vote/v1", {"round": 3},
                           signer.sign, signer.key_ref)    # in-toto Statement in DSSE
    t.verify_statement(env, t.key_verifiers([verifier]),
                       predicate_type="https://example.org/vote/v1").predicate

Errors: bad input raises a subclass of :class:`~cladelog.core.errors.InputError`
(:class:`NoteError`, :class:`EnvelopeError`, :class:`ProofFileError`); a check that
fails raises a subclass of :class:`~cladelog.core.errors.VerificationError`
(:class:`NoteSignatureError`, :class:`EnvelopeSignatureError`, :class:`ProofError`,
:class:`CheckpointRefused`). Names are imported lazily.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

_EXPORTS = {
    "EMPTY_ROOT": "merkle",
    "HASH_SIZE": "merkle",
    "MerkleTree": "merkle",
    "ProofError": "merkle",
    "leaf_hash": "merkle",
    "node_hash": "merkle",
    "root_from_inclusion": "merkle",
    "root_from_leaves": "merkle",
    "verify_consistency": "merkle",
    "verify_inclusion": "merkle",
    "Checkpoint": "note",
    "as_cosigner_key": "note",
    "as_cosigner_verifier": "note",
    "CosignatureSigner": "note",
    "CosignatureVerifier": "note",
    "Ed25519Signer": "note",
    "Ed25519Verifier": "note",
    "Note": "note",
    "NoteError": "note",
    "NoteSignature": "note",
    "NoteSignatureError": "note",
    "NoteSigner": "note",
    "NoteVerifier": "note",
    "format_checkpoint": "note",
    "generate_cosigner_key": "note",
    "generate_key": "note",
    "write_key_files": "note",
    "open_note": "note",
    "parse_checkpoint": "note",
    "parse_cosigner_key": "note",
    "parse_cosigner_verifier_key": "note",
    "parse_signer_key": "note",
    "parse_verifier_key": "note",
    "sign_note": "note",
    "verifier_key": "note",
    "CONSISTENCY_HEADER": "proof",
    "TLOG_PROOF_HEADER": "proof",
    "ConsistencyProofFile": "proof",
    "ProofFileError": "proof",
    "TlogProof": "proof",
    "format_consistency_proof": "proof",
    "format_tlog_proof": "proof",
    "parse_consistency_proof": "proof",
    "parse_tlog_proof": "proof",
    "PAYLOAD_TYPE_INTOTO": "dsse",
    "EnvelopeError": "dsse",
    "EnvelopeSignatureError": "dsse",
    "VerifiedBytes": "dsse",
    "VerifiedPayload": "dsse",
    "key_verifiers": "dsse",
    "make_statement": "dsse",
    "pae": "dsse",
    "parse_statement": "dsse",
    "sign_envelope": "dsse",
    "sign_statement": "dsse",
    "verify_envelope_bytes": "dsse",
    "verify_statement": "dsse",
    "CheckpointRefused": "verify",
    "VerifiedConsistency": "verify",
    "VerifiedInclusion": "verify",
    "VerifiedWitnesses": "verify",
    "witness_cosignatures": "verify",
    "load_verifiers": "verify",
    "load_witness_keys": "verify",
    "open_checkpoint": "verify",
    "verify_consistency_proof": "verify",
    "verify_cosignatures": "verify",
    "verify_inclusion_proof": "verify",
}

__all__ = [
    "CONSISTENCY_HEADER",
    "EMPTY_ROOT",
    "HASH_SIZE",
    "PAYLOAD_TYPE_INTOTO",
    "TLOG_PROOF_HEADER",
    "Checkpoint",
    "CheckpointRefused",
    "ConsistencyProofFile",
    "CosignatureSigner",
    "CosignatureVerifier",
    "Ed25519Signer",
    "Ed25519Verifier",
    "EnvelopeError",
    "EnvelopeSignatureError",
    "MerkleTree",
    "Note",
    "NoteError",
    "NoteSignature",
    "NoteSignatureError",
    "NoteSigner",
    "NoteVerifier",
    "ProofError",
    "ProofFileError",
    "TlogProof",
    "VerifiedBytes",
    "VerifiedConsistency",
    "VerifiedInclusion",
    "VerifiedPayload",
    "VerifiedWitnesses",
    "as_cosigner_key",
    "as_cosigner_verifier",
    "format_checkpoint",
    "format_consistency_proof",
    "format_tlog_proof",
    "generate_cosigner_key",
    "generate_key",
    "key_verifiers",
    "leaf_hash",
    "load_verifiers",
    "load_witness_keys",
    "make_statement",
    "node_hash",
    "open_checkpoint",
    "open_note",
    "pae",
    "parse_checkpoint",
    "parse_consistency_proof",
    "parse_cosigner_key",
    "parse_cosigner_verifier_key",
    "parse_signer_key",
    "parse_statement",
    "parse_tlog_proof",
    "parse_verifier_key",
    "root_from_inclusion",
    "root_from_leaves",
    "sign_envelope",
    "sign_note",
    "sign_statement",
    "verifier_key",
    "verify_consistency",
    "verify_consistency_proof",
    "verify_cosignatures",
    "verify_envelope_bytes",
    "verify_inclusion",
    "verify_inclusion_proof",
    "verify_statement",
    "witness_cosignatures",
    "write_key_files",
]

if TYPE_CHECKING:
    from .dsse import (
        PAYLOAD_TYPE_INTOTO,
        EnvelopeError,
        EnvelopeSignatureError,
        VerifiedBytes,
        VerifiedPayload,
        key_verifiers,
        make_statement,
        pae,
        parse_statement,
        sign_envelope,
        sign_statement,
        verify_envelope_bytes,
        verify_statement,
    )
    from .merkle import (
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
    from .note import (
        Checkpoint,
        CosignatureSigner,
        CosignatureVerifier,
        Ed25519Signer,
        Ed25519Verifier,
        Note,
        NoteError,
        NoteSignature,
        NoteSignatureError,
        NoteSigner,
        NoteVerifier,
        as_cosigner_key,
        as_cosigner_verifier,
        format_checkpoint,
        generate_cosigner_key,
        generate_key,
        open_note,
        parse_checkpoint,
        parse_cosigner_key,
        parse_cosigner_verifier_key,
        parse_signer_key,
        parse_verifier_key,
        sign_note,
        verifier_key,
    )
    from .proof import (
        CONSISTENCY_HEADER,
        TLOG_PROOF_HEADER,
        ConsistencyProofFile,
        ProofFileError,
        TlogProof,
        format_consistency_proof,
        format_tlog_proof,
        parse_consistency_proof,
        parse_tlog_proof,
    )
    from .verify import (
        CheckpointRefused,
        VerifiedConsistency,
        VerifiedInclusion,
        VerifiedWitnesses,
        load_verifiers,
        load_witness_keys,
        open_checkpoint,
        verify_consistency_proof,
        verify_cosignatures,
        verify_inclusion_proof,
        witness_cosignatures,
    )


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
