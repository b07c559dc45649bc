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

The log-proof functions are core's (:mod:`cladelog.core.transparency.verify`);
this module adds the receipt check and reports every failure as one
:class:`VerificationError` (a :class:`ValueError`) whose message starts with the
stage that failed; its ``__cause__`` is core's error, an
:class:`~cladelog.core.errors.InputError` for malformed input or a
:class:`~cladelog.core.errors.VerificationError` for a check that failed. Nothing
here touches a store, a clock or the network. A receipt's DSSE ``keyid`` is the
oracle key's ``name+hexkeyid``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from cladelog.core import CladelogError
from cladelog.core.canonical import CanonicalError, canonical_bytes
from cladelog.core.transparency import verify as _core
from cladelog.core.transparency.dsse import (
    EnvelopeError,
    VerifiedPayload,
    key_verifiers,
    verify_envelope,
)
from cladelog.core.transparency.note import Checkpoint, NoteVerifier
from cladelog.core.transparency.proof import ProofFileError
from cladelog.core.transparency.verify import KeyLike, VerifiedConsistency, VerifiedInclusion

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

_T = TypeVar("_T")


class VerificationError(ValueError):
    """A receipt, checkpoint or proof failed verification; the message names the stage."""


def _checked(call: Callable[[], _T]) -> _T:
    try:
        return call()
    except ProofFileError as exc:
        raise VerificationError(f"proof file: {exc}") from exc
    except CladelogError as exc:
        raise VerificationError(str(exc)) from exc


@dataclass(frozen=True, slots=True)
class VerifiedReceipt:
    """A receipt signed by a trusted oracle key and included in the log."""

    payload: VerifiedPayload
    inclusion: VerifiedInclusion


def load_verifiers(keys: Iterable[KeyLike], *, where: str = "keys") -> tuple[NoteVerifier, ...]:
    """Turn key strings (or ready verifier objects) into verifiers; at least one is needed."""
    return _checked(lambda: _core.load_verifiers(keys, where=where))


def open_checkpoint(
    note: str, log_keys: Iterable[KeyLike], *, origin: str | None = None, where: str = "checkpoint"
) -> tuple[Checkpoint, tuple[str, ...]]:
    """Verify a signed checkpoint; return it and the names of the log keys that signed it."""
    return _checked(lambda: _core.open_checkpoint(note, log_keys, origin=origin, where=where))


def verify_inclusion_proof(
    proof_text: str, leaf: bytes, log_keys: Iterable[KeyLike], *, origin: str | None = None
) -> VerifiedInclusion:
    """Verify a ``c2sp.org/tlog-proof@v1`` file for the leaf bytes ``leaf``."""
    return _checked(lambda: _core.verify_inclusion_proof(proof_text, leaf, log_keys,
                                                          origin=origin))


def verify_consistency_proof(
    proof_text: str, log_keys: Iterable[KeyLike], *, origin: str | None = None
) -> VerifiedConsistency:
    """Verify a consistency-proof file: both checkpoints signed, same origin, proof holds."""
    return _checked(lambda: _core.verify_consistency_proof(proof_text, log_keys, origin=origin))


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
        payload = verify_envelope(envelope, key_verifiers(oracles))
    except EnvelopeError as exc:
        raise VerificationError(f"receipt: {exc}") from exc
    try:
        leaf = canonical_bytes(envelope, path="envelope")
    except CanonicalError as exc:  # e.g. a Mapping that is not a dict
        raise VerificationError(f"receipt: {exc}") from exc
    return VerifiedReceipt(
        payload, verify_inclusion_proof(proof_text, leaf, log_keys, origin=origin)
    )
