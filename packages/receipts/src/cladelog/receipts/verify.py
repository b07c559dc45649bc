"""Verify cladelog receipts and log proofs offline: the one module a third party imports.

For an auditor
--------------
You need the log's verifier key(s) (signed-note key strings,
``name+hexkeyid+base64key``) and, for receipts, the oracle's verifier key(s);
they are different keys. Then:

* :func:`verify_inclusion_proof` — a ``c2sp.org/tlog-proof@v1`` file proves that
  some leaf bytes are entry ``index`` of the log at a signed checkpoint;
* :func:`verify_consistency_proof` — a consistency-proof file proves that the
  newer signed checkpoint extends the older one (the log is append-only);
* :func:`verify_receipt` — a receipt (DSSE envelope around an in-toto Statement
  whose predicate is the register entry) is signed by a trusted oracle key and
  is included in the log. The leaf bytes of a receipt are the RFC 8785
  canonical bytes of the whole envelope.

Each step is the pure function of its own module (:mod:`.merkle`, :mod:`.dsse`,
:mod:`.note`, :mod:`.proofs`); nothing here touches a store, a clock or the
network. Order of checks: checkpoint signature first (by a trusted log key),
then the checkpoint's origin, then its body, then the Merkle proof. A
checkpoint's origin must equal ``origin`` when given, and otherwise the name of
a log key that signed it. A receipt's DSSE ``keyid`` is the oracle key's
``name+hexkeyid``. Every failure raises :class:`VerificationError` (a
:class:`ValueError`) whose message starts with the stage that failed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cladelog.core.canonical import CanonicalError, canonical_bytes

from .dsse import EnvelopeError, VerifiedPayload, Verifier, verify_envelope
from .merkle import ProofError, leaf_hash, verify_consistency, verify_inclusion
from .note import (
    Checkpoint,
    NoteError,
    NoteVerifier,
    open_note,
    parse_checkpoint,
    parse_verifier_key,
)
from .proofs import ProofFileError, parse_consistency_proof, parse_tlog_proof

__all__ = [
    "KeyLike",
    "VerificationError",
    "VerifiedConsistency",
    "VerifiedInclusion",
    "VerifiedReceipt",
    "load_verifiers",
    "open_checkpoint",
    "verify_consistency_proof",
    "verify_inclusion_proof",
    "verify_receipt",
]

KeyLike = str | NoteVerifier
"""A verifier key string, or any object with ``name``, ``key_id`` and ``verify``."""


class VerificationError(ValueError):
    """A receipt, checkpoint or proof failed verification; the message names the stage."""


@dataclass(frozen=True, slots=True)
class VerifiedInclusion:
    """Leaf ``leaf_hash`` is entry ``index`` of the log at ``checkpoint``."""

    checkpoint: Checkpoint
    index: int
    leaf_hash: bytes
    signers: tuple[str, ...]
    extra: bytes | None


@dataclass(frozen=True, slots=True)
class VerifiedConsistency:
    """The log at ``new`` is an append-only extension of the log at ``old``."""

    old: Checkpoint
    new: Checkpoint
    signers: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class VerifiedReceipt:
    """A receipt signed by a trusted oracle key and included in the log."""

    payload: VerifiedPayload
    inclusion: VerifiedInclusion


def load_verifiers(keys: Iterable[KeyLike], *, where: str = "keys") -> tuple[NoteVerifier, ...]:
    """Turn key strings (or ready verifier objects) into verifiers; at least one is needed."""
    if isinstance(keys, str):
        keys = [keys]
    try:
        items = list(keys)
    except TypeError:
        raise VerificationError(f"{where}: must be an iterable of keys") from None
    out: list[NoteVerifier] = []
    for i, key in enumerate(items):
        if isinstance(key, str):
            try:
                out.append(parse_verifier_key(key))
            except NoteError as exc:
                raise VerificationError(f"{where}[{i}]: {exc}") from exc
        elif isinstance(key, NoteVerifier):
            out.append(key)
        else:
            raise VerificationError(f"{where}[{i}]: not a verifier key, got {type(key).__name__}")
    if not out:
        raise VerificationError(f"{where}: at least one trusted key is required")
    return tuple(out)


def open_checkpoint(
    note: str, log_keys: Iterable[KeyLike], *, origin: str | None = None, where: str = "checkpoint"
) -> tuple[Checkpoint, tuple[str, ...]]:
    """Verify a signed checkpoint; return it and the names of the log keys that signed it."""
    verifiers = load_verifiers(log_keys, where="log_keys")
    try:
        opened = open_note(note, verifiers)
        checkpoint = parse_checkpoint(opened.text)
    except NoteError as exc:
        raise VerificationError(f"{where}: {exc}") from exc
    signers = opened.verified_names
    if origin is not None:
        if checkpoint.origin != origin:
            raise VerificationError(
                f"{where}.origin: expected {origin!r}, got {checkpoint.origin!r}"
            )
    elif checkpoint.origin not in signers:
        raise VerificationError(
            f"{where}.origin: {checkpoint.origin!r} is not the name of a key that signed it"
        )
    return checkpoint, signers


def verify_inclusion_proof(
    proof_text: str, leaf: bytes, log_keys: Iterable[KeyLike], *, origin: str | None = None
) -> VerifiedInclusion:
    """Verify a ``c2sp.org/tlog-proof@v1`` file for the leaf bytes ``leaf``."""
    if not isinstance(leaf, bytes):
        raise VerificationError(f"leaf: must be bytes, got {type(leaf).__name__}")
    try:
        parsed = parse_tlog_proof(proof_text)
    except ProofFileError as exc:
        raise VerificationError(f"proof file: {exc}") from exc
    checkpoint, signers = open_checkpoint(parsed.checkpoint, log_keys, origin=origin)
    lh = leaf_hash(leaf)
    try:
        verify_inclusion(lh, parsed.index, checkpoint.size, parsed.proof, checkpoint.root_hash)
    except ProofError as exc:
        raise VerificationError(f"inclusion: {exc}") from exc
    return VerifiedInclusion(checkpoint, parsed.index, lh, signers, parsed.extra)


def verify_consistency_proof(
    proof_text: str, log_keys: Iterable[KeyLike], *, origin: str | None = None
) -> VerifiedConsistency:
    """Verify a consistency-proof file: both checkpoints signed, same origin, proof holds."""
    try:
        parsed = parse_consistency_proof(proof_text)
    except ProofFileError as exc:
        raise VerificationError(f"proof file: {exc}") from exc
    keys = load_verifiers(log_keys, where="log_keys")
    old, old_signers = open_checkpoint(
        parsed.old_checkpoint, keys, origin=origin, where="old_checkpoint"
    )
    new, new_signers = open_checkpoint(
        parsed.new_checkpoint, keys, origin=old.origin, where="new_checkpoint"
    )
    try:
        verify_consistency(old.size, new.size, parsed.proof, old.root_hash, new.root_hash)
    except ProofError as exc:
        raise VerificationError(f"consistency: {exc}") from exc
    signers = tuple(dict.fromkeys(old_signers + new_signers))
    return VerifiedConsistency(old, new, signers)


def _dsse_verifiers(keys: tuple[NoteVerifier, ...]) -> dict[str, Verifier]:
    return {f"{k.name}+{bytes(k.key_id).hex()}": k.verify for k in keys}


def verify_receipt(
    envelope: Mapping[str, Any],
    proof_text: str,
    *,
    oracle_keys: Iterable[KeyLike],
    log_keys: Iterable[KeyLike],
    origin: str | None = None,
) -> VerifiedReceipt:
    """Verify a receipt's oracle signature and its inclusion in the log.

    The envelope is verified first (signature, then canonical in-toto payload);
    its RFC 8785 canonical bytes are then the leaf checked against the proof.
    """
    oracles = load_verifiers(oracle_keys, where="oracle_keys")
    try:
        payload = verify_envelope(envelope, _dsse_verifiers(oracles))
    except EnvelopeError as exc:
        raise VerificationError(f"receipt: {exc}") from exc
    try:
        leaf = canonical_bytes(envelope, path="envelope")
    except CanonicalError as exc:  # e.g. a Mapping that is not a dict
        raise VerificationError(f"receipt: {exc}") from exc
    return VerifiedReceipt(
        payload, verify_inclusion_proof(proof_text, leaf, log_keys, origin=origin)
    )
