"""C2SP signed notes, signed-note keys, tlog checkpoints and witness cosignatures.

For an auditor
--------------
A *signed note* (c2sp.org/signed-note) is UTF-8 text that ends in a newline,
followed by one blank line and one or more signature lines::

    <text, ending in "\\n">
    <blank line>
    — <key name> <base64(4-byte key ID || signature)>

The signature covers exactly the text bytes (final newline included, blank line
excluded). :func:`open_note` enforces the spec's rules: the note is valid UTF-8
without control characters other than newline; signatures by keys the caller
does not trust (name *and* key ID both unknown together) are ignored; a
signature by a trusted key that does not verify rejects the whole note; and at
least one trusted signature must verify. Only then is the text returned.

Keys use the Go ``sumdb/note`` text form, with key ID
``SHA-256(name || 0x0A || alg || public key)[:4]`` (:func:`key_id`):

* verifier key: ``<name>+<8 hex key ID>+<base64(0x01 || 32-byte Ed25519 key)>``
* signer key:   ``PRIVATE+KEY+<name>+<8 hex key ID>+<base64(0x01 || 32-byte seed)>``

A *cosignature* (c2sp.org/tlog-cosignature, ``cosignature/v1``) is a note
signature by a witness: key type ``0x04``, key ID
``SHA-256(name || 0x0A || 0x04 || public key)[:4]``, and the signature bytes after
the key ID are an 8-byte big-endian POSIX timestamp followed by the Ed25519
signature of ``"cosignature/v1\ntime <timestamp>\n" || note text``
(:class:`CosignatureSigner`, :class:`CosignatureVerifier`). A cosigner's keys use
the same string forms with the type byte ``0x04``. Because a cosignature is an
ordinary signature line, :func:`open_note` verifies it like any other when the
caller trusts the witness key.

Only Ed25519 (types ``0x01`` and ``0x04``) has a key string form here. ECDSA P-256 note
signatures (type ``0x02``, as used by Rekor v1 checkpoints, key ID =
``SHA-256(DER SubjectPublicKeyInfo)[:4]``) can be verified through
:func:`ecdsa_verifier`. Anything with ``name``, ``key_id`` and
``verify(message, signature) -> bool`` can serve as a verifier.

A *checkpoint* (c2sp.org/tlog-checkpoint) is a note whose text is: origin line,
tree size in ASCII decimal without leading zeros, base64 root hash (32 bytes),
then optional non-empty extension lines. :func:`parse_checkpoint` must only be
given text that :func:`open_note` has verified.

Errors: everything raises :class:`NoteError` (an
:class:`~cladelog.core.errors.InputError`: bad input, exit 2) except a well-formed
note whose trusted signature fails or that no trusted key signed, which raises
:class:`NoteSignatureError` (also a :class:`~cladelog.core.errors.VerificationError`:
exit 1).

Limits: a note may carry at most :data:`MAX_SIGNATURES` signature lines and
:data:`MAX_NOTE_CHARS` characters. Base64 everywhere is RFC 4648 standard
alphabet with padding, and must be canonical (decode then re-encode gives the
same string). Key generation is the only function that touches randomness, and
only when no seed is given.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from ..errors import InputError, VerificationError

__all__ = [
    "ALG_COSIGNATURE_V1",
    "ALG_ECDSA",
    "ALG_ED25519",
    "COSIGNATURE_V1_HEADER",
    "MAX_NOTE_CHARS",
    "MAX_SIGNATURES",
    "Checkpoint",
    "CosignatureSigner",
    "CosignatureVerifier",
    "EcdsaVerifier",
    "Ed25519Signer",
    "Ed25519Verifier",
    "Note",
    "NoteError",
    "NoteSignature",
    "NoteSignatureError",
    "NoteSigner",
    "NoteVerifier",
    "as_cosigner_key",
    "as_cosigner_verifier",
    "cosigned_message",
    "ecdsa_verifier",
    "ed25519_verify",
    "format_checkpoint",
    "generate_cosigner_key",
    "generate_key",
    "key_id",
    "open_note",
    "parse_checkpoint",
    "parse_cosigner_key",
    "parse_cosigner_verifier_key",
    "parse_signer_key",
    "parse_verifier_key",
    "sign_note",
    "split_note",
    "verifier_key",
    "write_key_files",
]

ALG_ED25519 = 0x01
ALG_ECDSA = 0x02
ALG_COSIGNATURE_V1 = 0x04
COSIGNATURE_V1_HEADER = "cosignature/v1"
_MAX_TIMESTAMP = 2**63 - 1
MAX_SIGNATURES = 100
MAX_NOTE_CHARS = 1_000_000
_SIG_PREFIX = "\u2014 "  # em dash, space
_MAX_UINT64 = 2**64 - 1
_DECIMAL = re.compile(r"0|[1-9][0-9]*", re.ASCII)
_HEX8 = re.compile(r"[0-9a-fA-F]{8}", re.ASCII)


class NoteError(InputError):
    """A key, note or checkpoint is malformed (or, as :class:`NoteSignatureError`,
    does not verify)."""


class NoteSignatureError(NoteError, VerificationError):
    """A well-formed note is not signed by the trusted keys: a trusted key's signature
    fails, or no trusted key signed it. A :class:`VerificationError` (exit 1)."""


def _b64decode(where: str, text: object) -> bytes:
    """Strict, canonical standard base64 (RFC 4648 section 4, padded)."""
    if not isinstance(text, str):
        raise NoteError(f"{where}: must be a base64 string, got {type(text).__name__}")
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise NoteError(f"{where}: not valid base64") from None
    if base64.b64encode(raw).decode("ascii") != text:
        raise NoteError(f"{where}: not canonical padded base64")
    return raw


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def _check_name(where: str, name: object) -> str:
    if not isinstance(name, str):
        raise NoteError(f"{where}: must be a string, got {type(name).__name__}")
    if not name:
        raise NoteError(f"{where}: must not be empty")
    if "+" in name or any(c.isspace() or c < " " for c in name):
        raise NoteError(f"{where}: {name!r} must not contain spaces, '+' or control characters")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise NoteError(f"{where}: {name!r} is not valid UTF-8") from None
    return name


def key_id(name: str, alg: int, public_key: bytes) -> bytes:
    """Return the 4-byte key ID ``SHA-256(name || 0x0A || alg || public_key)[:4]``."""
    _check_name("name", name)
    if type(alg) is not int or not 0 <= alg <= 255:
        raise NoteError(f"alg: must be a byte value, got {alg!r}")
    return hashlib.sha256(name.encode() + b"\n" + bytes([alg]) + bytes(public_key)).digest()[:4]


def ed25519_verify(public_key: bytes, message: bytes, signature: bytes) -> bool:
    """RFC 8032 Ed25519 verification; False for any malformed key or signature."""
    if len(public_key) != 32 or len(signature) != 64:
        return False
    try:
        _public_key(bytes(public_key)).verify(bytes(signature), bytes(message))
    except (InvalidSignature, ValueError):
        return False
    return True


@functools.lru_cache(maxsize=256)
def _public_key(raw: bytes) -> Ed25519PublicKey:
    """The loaded key object for 32 raw bytes (cached: loading costs as much as a hash)."""
    return Ed25519PublicKey.from_public_bytes(raw)


# -- verifiers and signers ----------------------------------------------------------------


@runtime_checkable
class NoteVerifier(Protocol):
    """What :func:`open_note` needs from a trusted key."""

    @property
    def name(self) -> str: ...

    @property
    def key_id(self) -> bytes: ...

    def verify(self, message: bytes, signature: bytes) -> bool: ...


@runtime_checkable
class NoteSigner(Protocol):
    """What :func:`sign_note` needs from a signing key."""

    @property
    def name(self) -> str: ...

    @property
    def key_id(self) -> bytes: ...

    def sign(self, message: bytes) -> bytes: ...


@dataclass(frozen=True, slots=True)
class Ed25519Verifier:
    """An Ed25519 signed-note verifier key."""

    name: str
    key_id: bytes
    public_key: bytes

    def verify(self, message: bytes, signature: bytes) -> bool:
        """True iff ``signature`` is a valid Ed25519 signature of ``message``."""
        return ed25519_verify(self.public_key, message, signature)

    @property
    def key_ref(self) -> str:
        """``name+hexkeyid``: the key string without its public key (used as DSSE keyid)."""
        return f"{self.name}+{self.key_id.hex()}"

    @property
    def vkey(self) -> str:
        """The verifier key string ``name+hexkeyid+base64(0x01 || public key)``."""
        return f"{self.key_ref}+{_b64(bytes([ALG_ED25519]) + self.public_key)}"


@dataclass(frozen=True, slots=True)
class EcdsaVerifier:
    """An ECDSA P-256 / SHA-256 note verifier (signature type 0x02, ASN.1 DER signatures)."""

    name: str
    key_id: bytes
    spki_der: bytes
    _key: ec.EllipticCurvePublicKey = field(repr=False, compare=False)

    def verify(self, message: bytes, signature: bytes) -> bool:
        """True iff ``signature`` (DER) is a valid ECDSA-SHA256 signature of ``message``."""
        try:
            self._key.verify(bytes(signature), bytes(message), ec.ECDSA(hashes.SHA256()))
        except (InvalidSignature, ValueError):
            return False
        return True


def ecdsa_verifier(name: str, spki_der: bytes) -> EcdsaVerifier:
    """Build a type-0x02 verifier from a DER SubjectPublicKeyInfo of a P-256 key.

    Its key ID is ``SHA-256(spki_der)[:4]``, as the signed-note spec assigns.
    """
    _check_name("name", name)
    try:
        key = serialization.load_der_public_key(bytes(spki_der))
    except (ValueError, UnsupportedAlgorithm):
        raise NoteError("spki_der: not a DER SubjectPublicKeyInfo") from None
    if not isinstance(key, ec.EllipticCurvePublicKey) or key.curve.name != "secp256r1":
        raise NoteError("spki_der: not an ECDSA P-256 public key")
    der = bytes(spki_der)
    return EcdsaVerifier(name, hashlib.sha256(der).digest()[:4], der, key)


def _raw_public_key(seed: bytes) -> bytes:
    return (
        Ed25519PrivateKey.from_private_bytes(seed)
        .public_key()
        .public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    )


@dataclass(frozen=True, slots=True)
class Ed25519Signer:
    """An Ed25519 signed-note signer key. Its repr never shows the seed."""

    name: str
    key_id: bytes
    seed: bytes = field(repr=False)

    def sign(self, message: bytes) -> bytes:
        """The 64-byte Ed25519 signature of ``message``."""
        return Ed25519PrivateKey.from_private_bytes(self.seed).sign(bytes(message))

    @property
    def public_key(self) -> bytes:
        """The raw 32-byte public key."""
        return _raw_public_key(self.seed)

    @property
    def key_ref(self) -> str:
        """``name+hexkeyid``: the key string without its key material (a DSSE keyid)."""
        return f"{self.name}+{self.key_id.hex()}"

    def verifier(self) -> Ed25519Verifier:
        """The matching verifier key."""
        return Ed25519Verifier(self.name, self.key_id, self.public_key)

    @property
    def skey(self) -> str:
        """The signer key string ``PRIVATE+KEY+name+hexkeyid+base64(0x01 || seed)``."""
        raw = _b64(bytes([ALG_ED25519]) + self.seed)
        return f"PRIVATE+KEY+{self.name}+{self.key_id.hex()}+{raw}"


def cosigned_message(text: str, timestamp: int) -> bytes:
    """The bytes a ``cosignature/v1`` signs: header line, ``time`` line, then the note text."""
    if type(timestamp) is not int or not 0 <= timestamp <= _MAX_TIMESTAMP:
        raise NoteError(f"timestamp: must be an int in [0, 2**63-1], got {timestamp!r}")
    return f"{COSIGNATURE_V1_HEADER}\ntime {timestamp}\n".encode() + text.encode("utf-8")


@dataclass(frozen=True, slots=True)
class CosignatureVerifier:
    """A witness's ``cosignature/v1`` verifier key (type 0x04).

    :meth:`verify` takes the note text and the signature bytes after the key ID
    (8-byte big-endian timestamp, then the 64-byte Ed25519 signature), so it serves
    :func:`open_note` like any other verifier.
    """

    name: str
    key_id: bytes
    public_key: bytes

    def verify(self, message: bytes, signature: bytes) -> bool:
        """True iff ``signature`` is a valid cosignature/v1 of the note text ``message``."""
        if len(signature) != 72:
            return False
        timestamp = int.from_bytes(signature[:8], "big")
        if timestamp > _MAX_TIMESTAMP:
            return False
        try:
            text = bytes(message).decode("utf-8")
        except UnicodeDecodeError:
            return False
        return ed25519_verify(self.public_key, cosigned_message(text, timestamp), signature[8:])

    @staticmethod
    def timestamp(signature: bytes) -> int:
        """The POSIX timestamp carried by a cosignature's signature bytes."""
        return int.from_bytes(bytes(signature)[:8], "big")

    @property
    def key_ref(self) -> str:
        """``name+hexkeyid``."""
        return f"{self.name}+{self.key_id.hex()}"

    @property
    def vkey(self) -> str:
        """The verifier key string ``name+hexkeyid+base64(0x04 || public key)``."""
        return f"{self.key_ref}+{_b64(bytes([ALG_COSIGNATURE_V1]) + self.public_key)}"


@dataclass(frozen=True, slots=True)
class CosignatureSigner:
    """A witness's ``cosignature/v1`` signer key (type 0x04). Its repr never shows the seed.

    ``timestamp`` is the POSIX time written into each cosignature; the caller sets it
    (:meth:`at`), so signing itself never reads a clock.
    """

    name: str
    key_id: bytes
    seed: bytes = field(repr=False)
    timestamp: int = 0

    def at(self, timestamp: int) -> CosignatureSigner:
        """The same key, cosigning at ``timestamp``."""
        cosigned_message("", timestamp)  # checks the range
        return CosignatureSigner(self.name, self.key_id, self.seed, timestamp)

    def sign(self, message: bytes) -> bytes:
        """Timestamp (8 bytes, big-endian) || Ed25519 signature of the cosigned message."""
        text = bytes(message).decode("utf-8")
        signed = cosigned_message(text, self.timestamp)
        sig = Ed25519PrivateKey.from_private_bytes(self.seed).sign(signed)
        return self.timestamp.to_bytes(8, "big") + sig

    @property
    def public_key(self) -> bytes:
        """The raw 32-byte public key."""
        return _raw_public_key(self.seed)

    def verifier(self) -> CosignatureVerifier:
        """The matching verifier key."""
        return CosignatureVerifier(self.name, self.key_id, self.public_key)

    @property
    def skey(self) -> str:
        """The signer key string ``PRIVATE+KEY+name+hexkeyid+base64(0x04 || seed)``."""
        raw = _b64(bytes([ALG_COSIGNATURE_V1]) + self.seed)
        return f"PRIVATE+KEY+{self.name}+{self.key_id.hex()}+{raw}"


_ALG_NAMES = {ALG_ED25519: "0x01 Ed25519", ALG_COSIGNATURE_V1: "0x04 cosignature/v1"}


def _new_seed(seed: bytes | None) -> bytes:
    if seed is None:
        seed = Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.Raw,
            serialization.PrivateFormat.Raw,
            serialization.NoEncryption(),
        )
    if not isinstance(seed, bytes) or len(seed) != 32:
        raise NoteError("seed: must be 32 bytes")
    return seed


def generate_key(name: str, seed: bytes | None = None) -> tuple[str, str]:
    """Return ``(signer key string, verifier key string)`` for a new Ed25519 key.

    Without ``seed`` the 32-byte seed comes from the operating system's CSPRNG.
    """
    _check_name("name", name)
    seed = _new_seed(seed)
    signer = Ed25519Signer(name, key_id(name, ALG_ED25519, _raw_public_key(seed)), seed)
    return signer.skey, signer.verifier().vkey


def generate_cosigner_key(name: str, seed: bytes | None = None) -> tuple[str, str]:
    """Return ``(signer key string, verifier key string)`` for a new witness key (type 0x04)."""
    _check_name("name", name)
    seed = _new_seed(seed)
    kid = key_id(name, ALG_COSIGNATURE_V1, _raw_public_key(seed))
    signer = CosignatureSigner(name, kid, seed)
    return signer.skey, signer.verifier().vkey


def write_key_files(skey: str, vkey: str, private: os.PathLike[str] | str,
                    public: os.PathLike[str] | str, *, field: str = "--out") -> None:
    """Write a key pair: the private key ``private`` created anew with mode 0600 (never
    over an existing file), the public key ``public``. Raises :class:`InputError` naming
    ``field`` when either file exists or cannot be written; nothing is overwritten."""
    for path in (private, public):
        if os.path.lexists(path):
            raise InputError(f"{field}: {os.fspath(path)} already exists; refusing to "
                             "overwrite a key")
    try:
        fd = os.open(private, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(skey + "\n")
        with open(public, "x", encoding="utf-8") as fh:
            fh.write(vkey + "\n")
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the name
        raise InputError(f"{field}: cannot write the key files "
                         f"({getattr(exc, 'strerror', None) or exc})") from None


def _split_key(where: str, text: object, parts: int) -> list[str]:
    if not isinstance(text, str):
        raise NoteError(f"{where}: must be a string, got {type(text).__name__}")
    fields = text.split("+", parts - 1)  # the base64 part may itself contain '+'
    if len(fields) != parts:
        raise NoteError(f"{where}: expected {parts} '+'-separated fields, got {len(fields)}")
    return fields


def _key_material(where: str, name: str, hexid: str, b64: str, alg: int) -> tuple[bytes, bytes]:
    _check_name(f"{where}.name", name)
    if not _HEX8.fullmatch(hexid):
        raise NoteError(f"{where}.key_id: {hexid!r} is not 8 hex digits")
    raw = _b64decode(f"{where}.key", b64)
    if not raw:
        raise NoteError(f"{where}.key: empty")
    if raw[0] != alg:
        raise NoteError(
            f"{where}.key: unsupported algorithm 0x{raw[0]:02x} (expected {_ALG_NAMES[alg]})"
        )
    if len(raw) != 33:
        raise NoteError(f"{where}.key: Ed25519 key must be 32 bytes, got {len(raw) - 1}")
    return bytes.fromhex(hexid), raw[1:]


def _parse_vkey(vkey: str, alg: int) -> tuple[str, bytes, bytes]:
    name, hexid, b64 = _split_key("vkey", vkey, 3)
    kid, pub = _key_material("vkey", name, hexid, b64, alg)
    if key_id(name, alg, pub) != kid:
        raise NoteError(f"vkey.key_id: {hexid} does not match the key")
    return name, kid, pub


def _parse_skey(skey: str, alg: int) -> tuple[str, bytes, bytes]:
    fields = _split_key("skey", skey, 5)
    if fields[0] != "PRIVATE" or fields[1] != "KEY":
        raise NoteError("skey: must start with 'PRIVATE+KEY+'")
    kid, seed = _key_material("skey", fields[2], fields[3], fields[4], alg)
    if key_id(fields[2], alg, _raw_public_key(seed)) != kid:
        raise NoteError(f"skey.key_id: {fields[3]} does not match the key")
    return fields[2], kid, seed


def parse_verifier_key(vkey: str) -> Ed25519Verifier:
    """Parse ``name+hexkeyid+base64(0x01 || pubkey)``; the key ID must match the key."""
    return Ed25519Verifier(*_parse_vkey(vkey, ALG_ED25519))


def parse_signer_key(skey: str) -> Ed25519Signer:
    """Parse ``PRIVATE+KEY+name+hexkeyid+base64(0x01 || seed)``; the key ID must match."""
    return Ed25519Signer(*_parse_skey(skey, ALG_ED25519))


def parse_cosigner_verifier_key(vkey: str) -> CosignatureVerifier:
    """Parse a witness's ``name+hexkeyid+base64(0x04 || pubkey)``; the key ID must match."""
    return CosignatureVerifier(*_parse_vkey(vkey, ALG_COSIGNATURE_V1))


def parse_cosigner_key(skey: str) -> CosignatureSigner:
    """Parse a witness's ``PRIVATE+KEY+name+hexkeyid+base64(0x04 || seed)``."""
    return CosignatureSigner(*_parse_skey(skey, ALG_COSIGNATURE_V1))


def as_cosigner_key(skey: str) -> CosignatureSigner:
    """The witness (``cosignature/v1``, type 0x04) signer of a signer key string.

    A 0x04 key is returned as is. An Ed25519 (type 0x01) key, such as a consensus
    validator's, is given the same name and seed as a 0x04 key, with its key ID
    recomputed for type 0x04. One Ed25519 key then signs both DSSE envelopes and
    checkpoint cosignatures, and its two kinds of signature lines never share a key
    ID. The signed messages are kept apart: DSSE signs ``"DSSEv1 ..."`` (PAE) and a
    cosignature signs ``"cosignature/v1\ntime ..."``. Such a key must not also sign
    plain notes as type 0x01, because a note text can begin with any bytes.
    Raises :class:`NoteError` (the 0x04 parse error) when the key is of neither type.
    """
    try:
        return parse_cosigner_key(skey)
    except NoteError as first:
        try:
            signer = parse_signer_key(skey)
        except NoteError:
            raise first from None
    kid = key_id(signer.name, ALG_COSIGNATURE_V1, signer.public_key)
    return CosignatureSigner(signer.name, kid, signer.seed)


def as_cosigner_verifier(vkey: str) -> CosignatureVerifier:
    """The witness (``cosignature/v1``, type 0x04) verifier of a verifier key string:
    a 0x04 key as is, an Ed25519 (0x01) key re-typed like :func:`as_cosigner_key`."""
    try:
        return parse_cosigner_verifier_key(vkey)
    except NoteError as first:
        try:
            verifier = parse_verifier_key(vkey)
        except NoteError:
            raise first from None
    kid = key_id(verifier.name, ALG_COSIGNATURE_V1, verifier.public_key)
    return CosignatureVerifier(verifier.name, kid, verifier.public_key)


def verifier_key(skey: str) -> str:
    """The verifier key string of a signer key string (type 0x01 or 0x04)."""
    try:
        return parse_signer_key(skey).verifier().vkey
    except NoteError as first:
        try:
            return parse_cosigner_key(skey).verifier().vkey
        except NoteError:
            raise first from None


# -- notes --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NoteSignature:
    """One signature line: key name, 4-byte key ID, and the signature bytes after the ID."""

    name: str
    key_id: bytes
    signature: bytes


@dataclass(frozen=True, slots=True)
class Note:
    """An opened note: its verified text, every signature line, and the verified ones."""

    text: str
    signatures: tuple[NoteSignature, ...]
    verified: tuple[NoteSignature, ...]

    @property
    def verified_names(self) -> tuple[str, ...]:
        """Names of the trusted keys whose signatures verified."""
        return tuple(s.name for s in self.verified)


def _check_text(where: str, text: object) -> str:
    if not isinstance(text, str):
        raise NoteError(f"{where}: must be a string, got {type(text).__name__}")
    if len(text) > MAX_NOTE_CHARS:
        raise NoteError(f"{where}: longer than {MAX_NOTE_CHARS} characters")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise NoteError(f"{where}: not valid UTF-8 (lone surrogate)") from None
    for i, c in enumerate(text):
        if c < " " and c != "\n":
            raise NoteError(f"{where}: control character U+{ord(c):04X} at offset {i}")
    if not text.endswith("\n"):
        raise NoteError(f"{where}: must end with a newline")
    return text


def sign_note(text: str, *signers: NoteSigner) -> str:
    """Sign ``text`` (which must end in a newline) with each signer; return the note."""
    _check_text("text", text)
    if not signers:
        raise NoteError("signers: at least one signer is required")
    msg = text.encode("utf-8")
    lines = []
    for i, signer in enumerate(signers):
        if not isinstance(signer, NoteSigner):
            raise NoteError(f"signers[{i}]: needs name, key_id and sign(), got {signer!r}")
        name = _check_name(f"signers[{i}].name", signer.name)
        kid = bytes(signer.key_id)
        if len(kid) != 4:
            raise NoteError(f"signers[{i}].key_id: must be 4 bytes")
        lines.append(f"{_SIG_PREFIX}{name} {_b64(kid + bytes(signer.sign(msg)))}\n")
    return text + "\n" + "".join(lines)


def _parse_signature_line(i: int, line: str) -> NoteSignature:
    where = f"signatures[{i}]"
    if not line.startswith(_SIG_PREFIX):
        raise NoteError(f"{where}: must start with an em dash and a space")
    parts = line[len(_SIG_PREFIX) :].split(" ")
    if len(parts) != 2:
        raise NoteError(f"{where}: must be '\u2014 <name> <base64 signature>'")
    name = _check_name(f"{where}.name", parts[0])
    raw = _b64decode(f"{where}.signature", parts[1])
    if len(raw) < 5:
        raise NoteError(f"{where}.signature: must hold a 4-byte key ID and a signature")
    return NoteSignature(name, raw[:4], raw[4:])


def split_note(note: str | bytes) -> tuple[str, tuple[NoteSignature, ...]]:
    """Split a signed note into its text and its signature lines, checking their form
    only: nothing is verified (:func:`open_note` does that). Raises :class:`NoteError`."""
    if isinstance(note, bytes):
        try:
            note = note.decode("utf-8")
        except UnicodeDecodeError:
            raise NoteError("note: not valid UTF-8") from None
    note = _check_text("note", note)
    split = note.rfind("\n\n")
    if split < 0:
        raise NoteError("note: no blank line before the signatures")
    text, block = note[: split + 1], note[split + 2 :]
    lines = block.split("\n")[:-1]  # block ends with "\n", so the last piece is ""
    if not lines:
        raise NoteError("note: no signature lines after the blank line")
    if len(lines) > MAX_SIGNATURES:
        raise NoteError(f"note: more than {MAX_SIGNATURES} signatures")
    signatures = tuple(_parse_signature_line(i, line) for i, line in enumerate(lines))
    return text, signatures


def open_note(note: str | bytes, verifiers: Iterable[NoteVerifier]) -> Note:
    """Verify a signed note against trusted keys and return its text and signatures.

    Unknown keys are ignored; a known key whose signature fails rejects the
    note; at least one known key must have signed. Raises :class:`NoteError`.
    """
    text, signatures = split_note(note)
    trusted: dict[tuple[str, bytes], NoteVerifier] = {}
    for j, v in enumerate(verifiers):
        if not isinstance(v, NoteVerifier):
            raise NoteError(f"verifiers[{j}]: needs name, key_id and verify(), got {v!r}")
        ident = (v.name, bytes(v.key_id))
        if ident in trusted:
            raise NoteError(f"verifiers[{j}]: duplicate key {v.name}+{ident[1].hex()}")
        trusted[ident] = v
    msg = text.encode("utf-8")
    verified: dict[tuple[str, bytes], NoteSignature] = {}
    for i, sig in enumerate(signatures):
        ident = (sig.name, sig.key_id)
        verifier = trusted.get(ident)
        if verifier is None:
            continue
        if not verifier.verify(msg, sig.signature):
            raise NoteSignatureError(
                f"signatures[{i}]: signature by {sig.name}+{sig.key_id.hex()} does not verify"
            )
        verified.setdefault(ident, sig)
    if not verified:
        raise NoteSignatureError("note: no signature by a trusted key")
    return Note(text, signatures, tuple(verified.values()))


# -- checkpoints --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A parsed tlog checkpoint body."""

    origin: str
    size: int
    root_hash: bytes
    extensions: tuple[str, ...] = ()

    def text(self) -> str:
        """The note text of this checkpoint."""
        return format_checkpoint(self.origin, self.size, self.root_hash, self.extensions)


def _check_line(where: str, line: object) -> str:
    if not isinstance(line, str):
        raise NoteError(f"{where}: must be a string, got {type(line).__name__}")
    if not line:
        raise NoteError(f"{where}: must not be empty")
    if any(c < " " for c in line):
        raise NoteError(f"{where}: must not contain newlines or control characters")
    return line


def format_checkpoint(origin: str, size: int, root: bytes, extensions: Iterable[str] = ()) -> str:
    """Return checkpoint note text: origin, size, base64 root, extension lines."""
    _check_line("origin", origin)
    if type(size) is not int or not 0 <= size <= _MAX_UINT64:
        raise NoteError(f"size: must be an int in [0, 2**64-1], got {size!r}")
    if not isinstance(root, bytes) or len(root) != 32:
        raise NoteError("root: must be 32 bytes")
    ext = [_check_line(f"extensions[{i}]", e) for i, e in enumerate(extensions)]
    text = "".join(f"{line}\n" for line in (origin, str(size), _b64(root), *ext))
    return _check_text("checkpoint", text)


def parse_checkpoint(text: str) -> Checkpoint:
    """Parse verified checkpoint note text (as returned in :attr:`Note.text`)."""
    _check_text("checkpoint", text)
    lines = text.split("\n")[:-1]
    if len(lines) < 3:
        raise NoteError(f"checkpoint: needs at least 3 lines, got {len(lines)}")
    for i, line in enumerate(lines):
        if not line:
            raise NoteError(f"checkpoint.line[{i}]: must not be empty")
    if not _DECIMAL.fullmatch(lines[1]):
        raise NoteError(f"checkpoint.size: {lines[1]!r} is not a decimal without leading zeros")
    size = int(lines[1])
    if size > _MAX_UINT64:
        raise NoteError(f"checkpoint.size: {lines[1]} exceeds 2**64-1")
    root = _b64decode("checkpoint.root", lines[2])
    if len(root) != 32:
        raise NoteError(f"checkpoint.root: must be 32 bytes, got {len(root)}")
    return Checkpoint(lines[0], size, root, tuple(lines[3:]))
