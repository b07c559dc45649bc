"""Signing and verifying validator statements with core's transparency code.

Keys are Ed25519 keys in the signed-note format (:func:`cladelog.core.transparency.generate_key`);
the key's name is the validator id. A statement is an in-toto Statement v1 with
predicate type :data:`~cladelog.consensus.statements.PREDICATE_TYPE`, encoded as
RFC 8785 canonical JSON inside a DSSE envelope whose ``keyid`` is the key reference
``name+hexkeyid``. Its one subject is ``{"name": "<kind>:<target>", "digest":
{"sha256": <canonical digest of the predicate>}}`` (target: the candidate, the
proposal, or the validator), so the subject cannot name anything but the predicate.

Verification (:func:`open_statement`) takes the key from the ledger: a ``bond``
statement carries its own verifier key (``key``, whose name must be the validator
id; a later bond of the same id must use the same key), every other statement must
be signed by the key its validator bonded with. A bad signature, an unknown signer or
a malformed envelope raises :class:`~cladelog.consensus.errors.ConsensusInputError`
with the reason (refused, exit 2). The statement's digest is the SHA-256 of the
signed payload bytes.

No format is implemented here: envelopes, Statements and keys are core's
(:mod:`cladelog.core.transparency`).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs
from cladelog.consensus.errors import ConsensusInputError
from cladelog.consensus.statements import PREDICATE_TYPE, check_predicate

if TYPE_CHECKING:
    from cladelog.consensus.ledger import Ledger

__all__ = [
    "Signer",
    "generate_key",
    "load_signer",
    "open_statement",
    "open_with_keys",
    "peek_kind",
    "sign_statement",
    "signer_from_key",
    "statement_subject",
]


@attrs.frozen
class Signer:
    """A validator's signing key: ``name`` (the validator id), ``public_key`` (its
    verifier key string, what a bond statement carries) and the core signer."""

    name: str
    public_key: str
    key: Any = attrs.field(repr=False)


def generate_key(name: str, seed: bytes | None = None) -> tuple[str, str]:
    """(private key string, public key string) of a new validator key named ``name``."""
    from cladelog.core import transparency as t

    return t.generate_key(name, seed)


def signer_from_key(skey: str, where: str = "--key") -> Signer:
    """A :class:`Signer` from a private key string."""
    from cladelog.core import transparency as t

    try:
        key = t.parse_signer_key(skey.strip())
    except t.NoteError as exc:
        raise ConsensusInputError(f"{where}: not a validator private key ({exc})") from None
    return Signer(key.name, key.verifier().vkey, key)


def load_signer(path: str) -> Signer:
    """Read a private key file written by ``cladelog consensus keygen``."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read(10_000)
    except OSError as exc:
        raise ConsensusInputError(f"--key: cannot read {path} ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise ConsensusInputError(f"--key: {path} is not UTF-8 text") from None
    return signer_from_key(text, f"--key {path}")


def statement_subject(predicate: dict[str, Any]) -> list[dict[str, Any]]:
    """The Statement subject of a predicate (see the module docstring)."""
    from cladelog.core import canonical_digest

    target = predicate.get("candidate") or predicate.get("proposal") or predicate["validator"]
    return [{"name": f"{predicate['kind']}:{target}",
             "digest": {"sha256": canonical_digest(predicate)}}]


def sign_statement(predicate: dict[str, Any], signer: Signer) -> dict[str, Any]:
    """Check ``predicate`` and sign it as the validator ``signer`` (a DSSE envelope)."""
    from cladelog.core import transparency as t

    checked = check_predicate(predicate, "predicate")
    if checked["validator"] != signer.name:
        raise ConsensusInputError(f"predicate.validator: {checked['validator']!r} is not the "
                                  f"key's name {signer.name!r}")
    return t.sign_statement(statement_subject(checked), PREDICATE_TYPE, checked,
                            signer.key.sign, signer.key.key_ref)


def _unverified_statement(envelope: Any, where: str) -> dict[str, Any]:
    """The Statement of an envelope *without* checking its signature (to route it)."""
    import base64
    import binascii

    from cladelog.core import transparency as t

    if not isinstance(envelope, dict) or not isinstance(envelope.get("payload"), str):
        raise ConsensusInputError(f"{where}: must be a DSSE envelope (an object with payload, "
                                  "payloadType, signatures)")
    try:
        body = base64.b64decode(envelope["payload"], validate=True)
        return t.parse_statement(body, predicate_type=PREDICATE_TYPE)
    except (binascii.Error, ValueError) as exc:
        raise ConsensusInputError(f"{where}: {exc}") from None


def peek_kind(envelope: Any, where: str = "envelope") -> str:
    """The statement kind of an envelope (unverified; used to choose its event type)."""
    statement = _unverified_statement(envelope, where)
    return str(check_predicate(statement.get("predicate"), f"{where}.predicate")["kind"])


@functools.lru_cache(maxsize=4096)
def _verifiers(vkey: str) -> dict[str, Any]:
    from cladelog.core import transparency as t

    return t.key_verifiers([t.parse_verifier_key(vkey)])


def _signer_name(envelope: Any, where: str) -> str:
    signatures = envelope.get("signatures") if isinstance(envelope, dict) else None
    if not isinstance(signatures, list) or not signatures:
        raise ConsensusInputError(f"{where}.signatures: must be a non-empty list")
    first = signatures[0]
    keyid = first.get("keyid") if isinstance(first, dict) else None
    if not isinstance(keyid, str) or "+" not in keyid:
        raise ConsensusInputError(f"{where}.signatures[0].keyid: must be a key reference "
                                  "name+hexkeyid")
    return keyid.rsplit("+", 1)[0]


def open_statement(envelope: Any, ledger: Ledger, where: str) -> tuple[dict[str, Any], str]:
    """Verify a signed statement against the ledger's keys; return (predicate, digest)."""
    validators = ledger.state["validators"]
    return _open(envelope, lambda name: (validators[name]["key"] if name in validators
                                         else None), where, allow_bond=True)


def open_with_keys(envelope: Any, keys: Mapping[str, str],
                   where: str) -> tuple[dict[str, Any], str]:
    """Verify a signed statement against trusted verifier keys ``{validator id: vkey}``
    (no ledger; a certificate verifier's path); return (predicate, digest)."""
    return _open(envelope, keys.get, where, allow_bond=False)


def _open(envelope: Any, key_of: Callable[[str], str | None], where: str,
          *, allow_bond: bool) -> tuple[dict[str, Any], str]:
    from cladelog.core import transparency as t

    name = _signer_name(envelope, where)
    known = key_of(name)
    if known is not None:
        vkey = known
    elif not allow_bond:
        raise ConsensusInputError(f"{where}: unknown signature: {name!r} is not a trusted key")
    else:
        statement = _unverified_statement(envelope, where)
        predicate = statement.get("predicate")
        if not isinstance(predicate, dict) or predicate.get("kind") != "bond":
            raise ConsensusInputError(f"{where}: unknown signature: {name!r} is not a bonded "
                                      "validator")
        vkey = check_predicate(predicate, f"{where}.predicate")["key"]
    try:
        verifiers = _verifiers(vkey)
    except t.NoteError as exc:
        raise ConsensusInputError(f"{where}.predicate.key: not a verifier key ({exc})") from None
    try:
        verified = t.verify_statement(envelope, verifiers, predicate_type=PREDICATE_TYPE)
    except t.EnvelopeError as exc:  # a malformed envelope or a signature that fails
        raise ConsensusInputError(f"{where}: {exc}") from None
    predicate = check_predicate(verified.predicate, f"{where}.predicate")
    if predicate["validator"] != name:
        raise ConsensusInputError(f"{where}.predicate.validator: {predicate['validator']!r} "
                                  f"is not the signer {name!r}")
    if predicate["kind"] == "bond" and predicate["key"] != vkey:
        raise ConsensusInputError(f"{where}.predicate.key: validator {name!r} is bound to "
                                  "another key")
    if verified.statement["subject"] != statement_subject(predicate):
        raise ConsensusInputError(f"{where}.subject: must be the digest of the predicate")
    return predicate, hashlib.sha256(verified.payload).hexdigest()
