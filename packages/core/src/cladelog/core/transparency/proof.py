"""Text formats for offline Merkle proofs: C2SP tlog-proof and a consistency-proof file.

For an auditor
--------------
**Inclusion** (c2sp.org/tlog-proof, :func:`format_tlog_proof`,
:func:`parse_tlog_proof`)::

    c2sp.org/tlog-proof@v1
    extra <base64 opaque data>        (optional, NOT authenticated)
    index <0-based leaf index, ASCII decimal, no leading zeros>
    <base64 hash>                     (zero or more: the RFC 9162 audit path,
    ...                                leaf's sibling first)
    <empty line>
    <the log's signed checkpoint, verbatim>

**Consistency** (:data:`CONSISTENCY_HEADER`; no C2SP specification exists for
it; v1, written by cladelog-receipts 0.1, carried only the hashes and the two
checkpoints. This one follows tlog-proof's conventions line for line)::

    cladelog/tlog-consistency-proof@v2
    origin <the log's origin line, verbatim>
    old <the older tree size, ASCII decimal, no leading zeros, >= 1>
    new <the newer tree size, same form, >= old>
    <base64 hash>                     (the RFC 9162 consistency proof from
    ...                                old to new; none when old == new)
    <empty line>
    <the older signed checkpoint, verbatim>
    <empty line>
    <the newer signed checkpoint, verbatim>

How a third party parses it: split the text at ``"\n"``; line 1 is the header;
lines 2-4 are ``origin``, ``old`` and ``new`` (a keyword, one space, the value);
then hash lines up to the first empty line. What follows is two signed notes.
A checkpoint's note text has no empty line, so the older note ends at the
*second* empty line after the hashes (its own text/signature separator being
the first); the newer note is everything after that second empty line and ends
with a newline. Verify both notes with the log's keys, check each checkpoint's
origin equals the ``origin`` line and its size the ``old`` / ``new`` line
(:func:`~cladelog.core.transparency.verify.verify_consistency_proof` refuses a
file whose lines disagree with its checkpoints), then run RFC 9162 section
2.1.4.2 with the two checkpoints' sizes and roots. The repeated origin and sizes
let a reader see what is claimed before checking signatures; only the signed
checkpoints are trusted.

This module only parses and formats; it never trusts a checkpoint. Hashes are
32 bytes in canonical padded standard base64; at most :data:`MAX_PROOF_HASHES`
hash lines are accepted (an audit path in a tree of fewer than 2**64 leaves has
at most 64, a consistency proof at most 128). Every error is a
:class:`ProofFileError` (an :class:`~cladelog.core.errors.InputError`, exit 2)
naming the line or field.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import InputError

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

TLOG_PROOF_HEADER = "c2sp.org/tlog-proof@v1"
CONSISTENCY_HEADER = "cladelog/tlog-consistency-proof@v2"
MAX_PROOF_HASHES = 128
_MAX_CHARS = 4_000_000
_MAX_UINT64 = 2**64 - 1
_DECIMAL = re.compile(r"0|[1-9][0-9]*", re.ASCII)


class ProofFileError(InputError):
    """A proof file is malformed; the message names the line or field."""


@dataclass(frozen=True, slots=True)
class TlogProof:
    """A parsed c2sp.org/tlog-proof@v1 file (nothing in it is verified yet)."""

    index: int
    proof: tuple[bytes, ...]
    checkpoint: str
    extra: bytes | None = None


@dataclass(frozen=True, slots=True)
class ConsistencyProofFile:
    """A parsed consistency-proof file (nothing in it is verified yet)."""

    origin: str
    old_size: int
    new_size: int
    proof: tuple[bytes, ...]
    old_checkpoint: str
    new_checkpoint: str


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def _b64decode(where: str, text: str) -> bytes:
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise ProofFileError(f"{where}: not valid base64") from None
    if _b64(raw) != text:
        raise ProofFileError(f"{where}: not canonical padded base64")
    return raw


def _hash_lines(where: str, hashes: Sequence[bytes], minimum: int) -> list[str]:
    if isinstance(hashes, bytes | str) or not isinstance(hashes, Sequence):
        raise ProofFileError(f"{where}: must be a sequence of 32-byte hashes")
    if not minimum <= len(hashes) <= MAX_PROOF_HASHES:
        raise ProofFileError(
            f"{where}: needs {minimum}..{MAX_PROOF_HASHES} hashes, got {len(hashes)}"
        )
    out = []
    for i, h in enumerate(hashes):
        if not isinstance(h, bytes) or len(h) != 32:
            raise ProofFileError(f"{where}[{i}]: must be 32 bytes")
        out.append(_b64(h))
    return out


def _check_note_shape(where: str, note: object) -> str:
    """Structural check only: text, a blank line, signature lines, final newline."""
    if not isinstance(note, str):
        raise ProofFileError(f"{where}: must be a string, got {type(note).__name__}")
    if not note.endswith("\n") or "\n\n" not in note or note.startswith("\n"):
        raise ProofFileError(f"{where}: not a signed note (text, blank line, signatures)")
    if note.endswith("\n\n"):
        raise ProofFileError(f"{where}: no signature lines after the blank line")
    if any(c < " " and c != "\n" for c in note):
        raise ProofFileError(f"{where}: contains control characters")
    return note


def _check_text(text: object) -> str:
    if not isinstance(text, str):
        raise ProofFileError(f"proof file: must be a string, got {type(text).__name__}")
    if len(text) > _MAX_CHARS:
        raise ProofFileError(f"proof file: longer than {_MAX_CHARS} characters")
    return text


def _read_hashes(lines: list[str], start: int, where: str) -> tuple[list[bytes], int]:
    """Read base64 hash lines from ``start`` up to the first empty line; return (hashes, next)."""
    hashes: list[bytes] = []
    i = start
    while i < len(lines) and lines[i] != "":
        if len(hashes) == MAX_PROOF_HASHES:
            raise ProofFileError(f"{where}: more than {MAX_PROOF_HASHES} hashes")
        h = _b64decode(f"{where}[{len(hashes)}]", lines[i])
        if len(h) != 32:
            raise ProofFileError(f"{where}[{len(hashes)}]: must be 32 bytes, got {len(h)}")
        hashes.append(h)
        i += 1
    if i >= len(lines):
        raise ProofFileError(f"{where}: missing the empty line before the checkpoint")
    return hashes, i + 1


def format_tlog_proof(
    index: int, proof: Sequence[bytes], checkpoint: str, extra: bytes | None = None
) -> str:
    """Format a c2sp.org/tlog-proof@v1 file; ``checkpoint`` is the signed note, verbatim."""
    if type(index) is not int or not 0 <= index <= _MAX_UINT64:
        raise ProofFileError(f"index: must be an int in [0, 2**64-1], got {index!r}")
    head = [TLOG_PROOF_HEADER]
    if extra is not None:
        if not isinstance(extra, bytes):
            raise ProofFileError("extra: must be bytes")
        head.append(f"extra {_b64(extra)}")
    head.append(f"index {index}")
    head.extend(_hash_lines("proof", proof, 0))
    return "\n".join(head) + "\n\n" + _check_note_shape("checkpoint", checkpoint)


def parse_tlog_proof(text: str) -> TlogProof:
    """Parse a c2sp.org/tlog-proof@v1 file. Raises :class:`ProofFileError`."""
    lines = _check_text(text).split("\n")
    if lines[0] != TLOG_PROOF_HEADER:
        raise ProofFileError(f"line 1: must be {TLOG_PROOF_HEADER!r}")
    i = 1
    extra = None
    if i < len(lines) and lines[i].startswith("extra "):
        extra = _b64decode("extra", lines[i][len("extra ") :])
        i += 1
    if i >= len(lines) or not lines[i].startswith("index "):
        raise ProofFileError(f"line {i + 1}: must be 'index <decimal>'")
    digits = lines[i][len("index ") :]
    if not _DECIMAL.fullmatch(digits) or int(digits) > _MAX_UINT64:
        raise ProofFileError(f"index: {digits!r} is not a decimal in [0, 2**64-1]")
    hashes, nxt = _read_hashes(lines, i + 1, "proof")
    checkpoint = "\n".join(lines[nxt:])
    return TlogProof(int(digits), tuple(hashes), _check_note_shape("checkpoint", checkpoint), extra)


def _size_line(lines: list[str], i: int, key: str) -> int:
    prefix = f"{key} "
    if i >= len(lines) or not lines[i].startswith(prefix):
        raise ProofFileError(f"line {i + 1}: must be '{key} <decimal>'")
    digits = lines[i][len(prefix) :]
    if not _DECIMAL.fullmatch(digits) or int(digits) > _MAX_UINT64:
        raise ProofFileError(f"{key}: {digits!r} is not a decimal in [0, 2**64-1]")
    return int(digits)


def _check_origin(origin: object) -> str:
    if not isinstance(origin, str) or not origin:
        raise ProofFileError("origin: must be a non-empty string")
    if any(c < " " for c in origin):
        raise ProofFileError("origin: must not contain newlines or control characters")
    return origin


def format_consistency_proof(
    origin: str,
    old_size: int,
    new_size: int,
    proof: Sequence[bytes],
    old_checkpoint: str,
    new_checkpoint: str,
) -> str:
    """Format a consistency-proof file: origin, both sizes, the proof hashes and both
    signed checkpoints (verbatim)."""
    _check_origin(origin)
    for name, size in (("old_size", old_size), ("new_size", new_size)):
        if type(size) is not int or not 1 <= size <= _MAX_UINT64:
            raise ProofFileError(f"{name}: must be an int in [1, 2**64-1], got {size!r}")
    if old_size > new_size:
        raise ProofFileError(f"old_size: {old_size} is larger than new_size {new_size}")
    lines = [
        CONSISTENCY_HEADER,
        f"origin {origin}",
        f"old {old_size}",
        f"new {new_size}",
        *_hash_lines("proof", proof, 0),
    ]
    old = _check_note_shape("old_checkpoint", old_checkpoint)
    new = _check_note_shape("new_checkpoint", new_checkpoint)
    if old.count("\n\n") != 1:
        raise ProofFileError("old_checkpoint: must contain exactly one blank line")
    return "\n".join(lines) + "\n\n" + old + "\n" + new


def parse_consistency_proof(text: str) -> ConsistencyProofFile:
    """Parse a consistency-proof file. Raises :class:`ProofFileError`."""
    lines = _check_text(text).split("\n")
    if lines[0] != CONSISTENCY_HEADER:
        raise ProofFileError(f"line 1: must be {CONSISTENCY_HEADER!r}")
    if len(lines) < 2 or not lines[1].startswith("origin "):
        raise ProofFileError("line 2: must be 'origin <log origin>'")
    origin = _check_origin(lines[1][len("origin ") :])
    old_size = _size_line(lines, 2, "old")
    new_size = _size_line(lines, 3, "new")
    if old_size == 0:
        raise ProofFileError("old: a consistency proof from the empty tree proves nothing")
    if old_size > new_size:
        raise ProofFileError(f"old: {old_size} is larger than new {new_size}")
    hashes, nxt = _read_hashes(lines, 4, "proof")
    rest = "\n".join(lines[nxt:])
    # The older checkpoint has exactly one blank line (text | signatures); the next
    # blank line separates it from the newer checkpoint.
    first = rest.find("\n\n")
    second = rest.find("\n\n", first + 2) if first >= 0 else -1
    if second < 0:
        raise ProofFileError("checkpoints: expected two signed checkpoints and a blank line")
    old = _check_note_shape("old_checkpoint", rest[: second + 1])
    new = _check_note_shape("new_checkpoint", rest[second + 2 :])
    return ConsistencyProofFile(origin, old_size, new_size, tuple(hashes), old, new)
