"""Verify checkpoints and proof files offline: the functions a third party calls.

For an auditor
--------------
You need the log's verifier key(s) (signed-note key strings,
``name+hexkeyid+base64key``), and for witnessed checkpoints the witnesses'
cosigner keys (type 0x04). Then:

* :func:`open_checkpoint` — a signed C2SP checkpoint, signed by a trusted log key;
* :func:`verify_inclusion_proof` — a ``c2sp.org/tlog-proof@v1`` file proves that
  some leaf bytes are entry ``index`` of the log at its signed checkpoint (for a
  cladelog event log the leaf bytes are the event's 32-byte chain hash and the
  index is its position minus one);
* :func:`verify_consistency_proof` — a ``cladelog/tlog-consistency-proof@v2`` file
  proves that the newer signed checkpoint extends the older one;
* :func:`verify_cosignatures` — a checkpoint carries at least ``quorum`` valid
  ``cosignature/v1`` lines from distinct trusted witness keys.

Each step is the pure function of its own module (:mod:`.merkle`, :mod:`.note`,
:mod:`.proof`); nothing here touches a store, a clock or the network. Order of
checks: the file's layout, then the checkpoint's signature (by a trusted log
key), then its origin, then its body, then the Merkle proof.

Errors: malformed input raises an :class:`~cladelog.core.errors.InputError`
(:class:`~.proof.ProofFileError`, :class:`~.note.NoteError`); a well-formed file
that does not verify raises a :class:`~cladelog.core.errors.VerificationError`
(:class:`~.note.NoteSignatureError`, :class:`~.merkle.ProofError`,
:class:`CheckpointRefused`). Messages start with the stage that failed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar

from ..errors import VerificationError
from .merkle import ProofError, leaf_hash, verify_consistency, verify_inclusion
from .note import (
    Checkpoint,
    CosignatureVerifier,
    NoteError,
    NoteSignature,
    NoteVerifier,
    as_cosigner_verifier,
    open_note,
    parse_checkpoint,
    parse_verifier_key,
    split_note,
)
from .proof import parse_consistency_proof, parse_tlog_proof

__all__ = [
    "CheckpointRefused",
    "KeyLike",
    "VerifiedConsistency",
    "VerifiedInclusion",
    "VerifiedWitnesses",
    "load_verifiers",
    "load_witness_keys",
    "open_checkpoint",
    "verify_consistency_proof",
    "verify_cosignatures",
    "verify_inclusion_proof",
    "witness_cosignatures",
]

KeyLike = str | NoteVerifier
"""A verifier key string, or any object with ``name``, ``key_id`` and ``verify``."""

_E = TypeVar("_E", bound=Exception)


class CheckpointRefused(VerificationError, ValueError):
    """A well-formed, correctly signed checkpoint is not the one expected (wrong origin,
    too few witnesses, sizes that disagree with a proof file's lines)."""


def _prefixed(exc: _E, where: str) -> _E:
    """The same error class with ``where: `` before its message."""
    return type(exc)(f"{where}: {exc}")


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
class VerifiedWitnesses:
    """A checkpoint and the trusted witnesses whose cosignatures verified (with their times)."""

    checkpoint: Checkpoint
    witnesses: tuple[str, ...]
    timestamps: tuple[int, ...]


def load_verifiers(keys: Iterable[KeyLike], *, where: str = "keys") -> tuple[NoteVerifier, ...]:
    """Turn key strings (or ready verifier objects) into verifiers; at least one is needed."""
    if isinstance(keys, str):
        keys = [keys]
    try:
        items = list(keys)
    except TypeError:
        raise NoteError(f"{where}: must be an iterable of keys") from None
    out: list[NoteVerifier] = []
    for i, key in enumerate(items):
        if isinstance(key, str):
            try:
                out.append(parse_verifier_key(key))
            except NoteError as exc:
                raise _prefixed(exc, f"{where}[{i}]") from exc
        elif isinstance(key, NoteVerifier):
            out.append(key)
        else:
            raise NoteError(f"{where}[{i}]: not a verifier key, got {type(key).__name__}")
    if not out:
        raise NoteError(f"{where}: at least one trusted key is required")
    return tuple(out)


def load_witness_keys(keys: Iterable[str | CosignatureVerifier], *,
                      where: str = "witnesses") -> tuple[CosignatureVerifier, ...]:
    """Turn witness key strings into ``cosignature/v1`` verifiers; duplicates refused.

    A key is a witness key (type 0x04) or an Ed25519 key (type 0x01, e.g. a consensus
    validator's), which stands for the 0x04 form of the same key
    (:func:`~cladelog.core.transparency.note.as_cosigner_verifier`)."""
    out: list[CosignatureVerifier] = []
    for i, key in enumerate([keys] if isinstance(keys, str) else keys):
        try:
            v = key if isinstance(key, CosignatureVerifier) else as_cosigner_verifier(key)
        except NoteError as exc:
            raise _prefixed(exc, f"{where}[{i}]") from exc
        if any((v.name, v.key_id) == (w.name, w.key_id) for w in out):
            raise NoteError(f"{where}[{i}]: duplicate witness key {v.key_ref}")
        out.append(v)
    if not out:
        raise NoteError(f"{where}: at least one witness key is required")
    return tuple(out)


def open_checkpoint(
    note: str, log_keys: Iterable[KeyLike], *, origin: str | None = None, where: str = "checkpoint"
) -> tuple[Checkpoint, tuple[str, ...]]:
    """Verify a signed checkpoint; return it and the names of the log keys that signed it.

    Its origin must equal ``origin`` when given, and otherwise the name of a log key
    that signed it (the C2SP convention: a log's key is named after its origin).
    """
    verifiers = load_verifiers(log_keys, where="log_keys")
    try:
        opened = open_note(note, verifiers)
        checkpoint = parse_checkpoint(opened.text)
    except NoteError as exc:
        raise _prefixed(exc, where) from exc
    signers = opened.verified_names
    if origin is not None:
        if checkpoint.origin != origin:
            raise CheckpointRefused(
                f"{where}.origin: expected {origin!r}, got {checkpoint.origin!r}"
            )
    elif checkpoint.origin not in signers:
        raise CheckpointRefused(
            f"{where}.origin: {checkpoint.origin!r} is not the name of a key that signed it"
        )
    return checkpoint, signers


def verify_cosignatures(
    note: str,
    log_keys: Iterable[KeyLike],
    witness_keys: Iterable[str | CosignatureVerifier],
    quorum: int,
    *,
    origin: str | None = None,
    where: str = "checkpoint",
) -> VerifiedWitnesses:
    """Verify a checkpoint signed by the log and cosigned by at least ``quorum`` of the
    trusted witness keys (c2sp.org/tlog-cosignature, ``cosignature/v1``).

    A cosignature by a trusted witness that does not verify rejects the note (as any
    trusted signature does); untrusted signature lines are ignored.
    """
    if type(quorum) is not int or quorum < 1:
        raise NoteError(f"quorum: must be an int >= 1, got {quorum!r}")
    witnesses = load_witness_keys(witness_keys)
    if quorum > len(witnesses):
        raise NoteError(f"quorum: {quorum} is more than the {len(witnesses)} witness key(s) given")
    checkpoint, _ = open_checkpoint(note, log_keys, origin=origin, where=where)
    try:
        opened = open_note(note, [*load_verifiers(log_keys, where="log_keys"), *witnesses])
    except NoteError as exc:
        raise _prefixed(exc, where) from exc
    ids = {(w.name, w.key_id) for w in witnesses}
    good: list[NoteSignature] = [s for s in opened.verified if (s.name, s.key_id) in ids]
    if len(good) < quorum:
        names = ", ".join(s.name for s in good) or "none"
        raise CheckpointRefused(
            f"{where}: {len(good)} valid witness cosignature(s) ({names}), "
            f"the quorum is {quorum}"
        )
    return VerifiedWitnesses(
        checkpoint,
        tuple(s.name for s in good),
        tuple(CosignatureVerifier.timestamp(s.signature) for s in good),
    )


def witness_cosignatures(
    note: str,
    witness_keys: Iterable[str | CosignatureVerifier],
    *,
    where: str = "checkpoint",
) -> VerifiedWitnesses:
    """The checkpoint text of ``note`` and the witnesses among ``witness_keys`` whose
    ``cosignature/v1`` lines verify. None at all is a valid answer (unlike
    :func:`verify_cosignatures`, nothing here asks for a quorum or the log's key).

    The log's own signature is *not* checked: the caller compares the checkpoint's
    origin, size and root with what it trusts. A cosignature line by one of the keys
    that does not verify rejects the note (:class:`NoteSignatureError`), as in
    :func:`open_note`.
    """
    witnesses = load_witness_keys(witness_keys)
    try:
        text, signatures = split_note(note)
        checkpoint = parse_checkpoint(text)
    except NoteError as exc:
        raise _prefixed(exc, where) from exc
    present = [w for w in witnesses
               if any((s.name, s.key_id) == (w.name, w.key_id) for s in signatures)]
    if not present:
        return VerifiedWitnesses(checkpoint, (), ())
    try:
        opened = open_note(note, present)
    except NoteError as exc:
        raise _prefixed(exc, where) from exc
    return VerifiedWitnesses(
        checkpoint,
        tuple(s.name for s in opened.verified),
        tuple(CosignatureVerifier.timestamp(s.signature) for s in opened.verified),
    )


def verify_inclusion_proof(
    proof_text: str, leaf: bytes, log_keys: Iterable[KeyLike], *, origin: str | None = None
) -> VerifiedInclusion:
    """Verify a ``c2sp.org/tlog-proof@v1`` file for the leaf bytes ``leaf``."""
    if not isinstance(leaf, bytes):
        raise NoteError(f"leaf: must be bytes, got {type(leaf).__name__}")
    parsed = parse_tlog_proof(proof_text)
    checkpoint, signers = open_checkpoint(parsed.checkpoint, log_keys, origin=origin)
    lh = leaf_hash(leaf)
    try:
        verify_inclusion(lh, parsed.index, checkpoint.size, parsed.proof, checkpoint.root_hash)
    except ProofError as exc:
        raise _prefixed(exc, "inclusion") from exc
    return VerifiedInclusion(checkpoint, parsed.index, lh, signers, parsed.extra)


def verify_consistency_proof(
    proof_text: str, log_keys: Iterable[KeyLike], *, origin: str | None = None
) -> VerifiedConsistency:
    """Verify a consistency-proof file: both checkpoints signed by a trusted log key, the
    file's origin and sizes equal to theirs, and the proof from the older to the newer."""
    parsed = parse_consistency_proof(proof_text)
    if origin is not None and parsed.origin != origin:
        raise CheckpointRefused(f"origin: expected {origin!r}, got {parsed.origin!r}")
    keys = load_verifiers(log_keys, where="log_keys")
    old, old_signers = open_checkpoint(
        parsed.old_checkpoint, keys, origin=parsed.origin, where="old_checkpoint"
    )
    new, new_signers = open_checkpoint(
        parsed.new_checkpoint, keys, origin=parsed.origin, where="new_checkpoint"
    )
    for where, stated, signed in (("old", parsed.old_size, old), ("new", parsed.new_size, new)):
        if stated != signed.size:
            raise CheckpointRefused(
                f"{where}: the file says size {stated}, its signed checkpoint {signed.size}"
            )
    try:
        verify_consistency(old.size, new.size, parsed.proof, old.root_hash, new.root_hash)
    except ProofError as exc:
        raise _prefixed(exc, "consistency") from exc
    signers = tuple(dict.fromkeys(old_signers + new_signers))
    return VerifiedConsistency(old, new, signers)
