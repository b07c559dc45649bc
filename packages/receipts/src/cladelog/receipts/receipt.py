"""Receipts: a register entry in an in-toto Statement v1 in a DSSE envelope, and back.

The statement is ``{"_type": "https://in-toto.io/Statement/v1", "subject":
[{"name": "register-entry-<seq>", "digest": {"sha256": <entry hash>}}],
"predicateType": PREDICATE_TYPE, "predicate": <the entry>}``, serialised as RFC
8785 canonical JSON; the oracle signs the DSSE PAE of those bytes with its
Ed25519 signed-note key, and the signature's ``keyid`` is the key's
``name+hexkeyid``. :func:`open_receipt` verifies the signature first, then
parses only the verified bytes (which must be canonical), then checks the
statement and the entry. The leaf of a receipt in the Merkle log is the
canonical bytes of the whole envelope (:func:`receipt_leaf`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Final

import attrs
from cladelog.core.canonical import CanonicalError, canonical_bytes
from cladelog.core.transparency.dsse import (
    PAYLOAD_TYPE_INTOTO,
    STATEMENT_TYPE_V1,
    EnvelopeError,
    Verifier,
    sign_envelope,
    verify_envelope,
)
from cladelog.core.transparency.merkle import leaf_hash
from cladelog.core.transparency.note import Ed25519Signer

from .entries import PREDICATE_TYPE, Entry, entry_hash, parse_entry
from .errors import EntryError, ReceiptInputError, SignatureRefused

__all__ = ["MAX_ENVELOPE_CHARS", "OpenedReceipt", "make_receipt", "open_receipt", "receipt_leaf"]

#: Largest accepted ``payload`` member of an envelope, in base64 characters.
MAX_ENVELOPE_CHARS: Final = 1_000_000


# The canonical bytes of a receipt's statement around its predicate: RFC 8785 sorts the
# members "_type" < "predicate" < "predicateType" < "subject", so the predicate's own
# canonical bytes stand between these two (the tail ends with the subject and "}").
_HEAD: Final = b'{"_type":' + canonical_bytes(STATEMENT_TYPE_V1) + b',"predicate":'
_TAIL: Final = b',"predicateType":' + canonical_bytes(PREDICATE_TYPE) + b',"subject":'


def _entry_digest(payload: bytes, statement: Mapping[str, Any], doc: Mapping[str, Any]) -> str:
    """:func:`entry_hash` of ``doc``, read off the verified payload instead of re-encoded.

    Only for a payload that is the canonical form of ``statement`` (the DSSE check made
    sure) with exactly the four statement members, the in-toto type, the register's
    predicate type and ``doc`` as predicate: its bytes between :data:`_HEAD` and the tail
    are then the canonical bytes of ``doc``. Anything else is hashed the long way.
    """
    try:
        tail = _TAIL + canonical_bytes(statement["subject"]) + b"}"
    except (CanonicalError, KeyError):
        return entry_hash(doc)
    if len(payload) > len(_HEAD) + len(tail) and payload.startswith(_HEAD) \
            and payload.endswith(tail):
        return hashlib.sha256(payload[len(_HEAD):len(payload) - len(tail)]).hexdigest()
    return entry_hash(doc)  # pragma: no cover - a canonical statement always matches


def _subject(doc: Mapping[str, Any], digest: str | None = None) -> list[dict[str, Any]]:
    digest = entry_hash(doc) if digest is None else digest
    return [{"name": f"register-entry-{doc['seq']}", "digest": {"sha256": digest}}]


def make_receipt(entry: Mapping[str, Any] | Entry, signer: Ed25519Signer) -> dict[str, Any]:
    """Validate an entry and return the DSSE envelope (a JSON object) signed by ``signer``."""
    doc = entry.to_dict() if not isinstance(entry, Mapping) else dict(entry)
    parse_entry(doc)
    statement = {"_type": "https://in-toto.io/Statement/v1", "subject": _subject(doc),
                 "predicateType": PREDICATE_TYPE, "predicate": doc}
    payload = canonical_bytes(statement, path="statement")
    keyid = f"{signer.name}+{signer.key_id.hex()}"
    return sign_envelope(payload, PAYLOAD_TYPE_INTOTO, signer.sign, keyid)


def receipt_leaf(envelope: Mapping[str, Any]) -> bytes:
    """The Merkle leaf bytes of a receipt: the canonical bytes of its envelope."""
    try:
        return canonical_bytes(envelope, path="envelope")
    except CanonicalError as exc:
        raise ReceiptInputError(str(exc)) from None


@attrs.frozen
class OpenedReceipt:
    """A verified receipt: the entry as signed (dict and parsed), signers, leaf and entry hash.

    ``entry_hash`` is the hex SHA-256 of the entry's canonical bytes (what the next
    entry's ``prev`` links to), computed once while checking the statement's subject.
    """

    envelope: dict[str, Any]
    doc: dict[str, Any]
    entry: Entry
    keyids: tuple[str, ...]
    leaf_hash: str
    entry_hash: str = ""


def _shape(envelope: object) -> dict[str, Any]:
    if not isinstance(envelope, dict):
        raise ReceiptInputError(f"envelope: must be an object, got {type(envelope).__name__}")
    payload = envelope.get("payload")
    if isinstance(payload, str) and len(payload) > MAX_ENVELOPE_CHARS:
        raise ReceiptInputError(f"envelope.payload: longer than {MAX_ENVELOPE_CHARS} characters")
    return envelope


def open_receipt(envelope: object, verifiers: Mapping[str, Verifier], *,
                 where: str = "receipt") -> OpenedReceipt:
    """Verify a receipt against ``verifiers`` (keyid -> verify) and parse its entry.

    Raises :class:`SignatureRefused` when no trusted signature verifies (or a
    trusted one fails), :class:`ReceiptInputError` / :class:`EntryError` when the
    envelope, statement or entry is malformed. Messages start with ``where``.
    """
    try:
        return _open(envelope, verifiers, where)
    except ReceiptInputError as exc:
        raise type(exc)(f"{where}: {exc}") from None


def _open(envelope: object, verifiers: Mapping[str, Verifier], where: str) -> OpenedReceipt:
    env = _shape(envelope)
    try:
        verified = verify_envelope(env, verifiers)
    except EnvelopeError as exc:
        message = str(exc)
        if "does not verify" in message or "no signature by a trusted keyid" in message:
            raise SignatureRefused(f"{where}: {message}") from None
        raise ReceiptInputError(message) from None
    statement = verified.statement
    if statement.get("predicateType") != PREDICATE_TYPE:
        raise ReceiptInputError(f"statement.predicateType: must be {PREDICATE_TYPE!r}")
    extra = set(statement) - {"_type", "subject", "predicateType", "predicate"}
    if extra:
        raise ReceiptInputError(f"statement: unexpected members {sorted(extra)}")
    doc = verified.predicate
    entry = parse_entry(doc)
    digest = _entry_digest(verified.payload, statement, doc)
    if statement["subject"] != _subject(doc, digest):
        raise EntryError("statement.subject: must be [{name: register-entry-<seq>, digest: "
                         "{sha256: <entry hash>}}] for this entry")
    leaf = leaf_hash(receipt_leaf(env)).hex()
    return OpenedReceipt(env, doc, entry, verified.keyids, leaf, digest)
