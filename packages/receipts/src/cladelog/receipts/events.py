"""The receipts plugin's event types: its public, versioned contract (all schema version 1).

=============================  ======================  ===========================================
type                           stream                  data
=============================  ======================  ===========================================
``receipts.entry_recorded``    ``receipts.register``   ``seq``, ``kind``, ``entry`` (the register
                                                       entry exactly as signed), ``envelope`` (the
                                                       DSSE envelope), ``leaf_hash`` (hex RFC 9162
                                                       leaf hash of the envelope's canonical
                                                       bytes), ``flags``, ``recomputed``
``receipts.key_registered``    ``receipts.keys``       ``key_ref`` (``name+hexkeyid``), ``role``
                                                       (``oracle`` or ``log``), ``vkey``
``receipts.key_revoked``       ``receipts.keys``       ``key_ref``, ``from_seq`` (signatures on
                                                       entries with seq >= from_seq, and
                                                       checkpoints of size > from_seq, are
                                                       invalid), ``reason``
``receipts.checkpoint_signed`` ``receipts.checkpoints``  ``size``, ``root`` (hex), ``origin``,
                                                       ``key_ref``, ``note`` (the signed
                                                       checkpoint, verbatim)
=============================  ======================  ===========================================

Entry ``seq`` n is the (n+1)-th event of the ``receipts.register`` stream, so the
register appends it with ``expected_versions={"receipts.register": n}``: two
concurrent writers cannot both record the same seq. See ``docs/events.md``.
"""

from __future__ import annotations

from typing import Any, Final

import attrs
from cladelog.core import EventType

__all__ = [
    "CHECKPOINTS_STREAM",
    "CHECKPOINT_SIGNED",
    "ENTRY_RECORDED",
    "EVENT_TYPES",
    "KEYS_STREAM",
    "KEY_REGISTERED",
    "KEY_REVOKED",
    "REGISTER_STREAM",
    "CheckpointSigned",
    "EntryRecorded",
    "KeyRegistered",
    "KeyRevoked",
]

REGISTER_STREAM: Final = "receipts.register"
KEYS_STREAM: Final = "receipts.keys"
CHECKPOINTS_STREAM: Final = "receipts.checkpoints"


@attrs.frozen
class EntryRecorded:
    """``receipts.entry_recorded`` v1: one register entry, as signed, with its checks."""

    seq: int
    kind: str
    entry: dict[str, Any]
    envelope: dict[str, Any]
    leaf_hash: str
    flags: list[str]
    recomputed: dict[str, Any]


@attrs.frozen
class KeyRegistered:
    """``receipts.key_registered`` v1: a public key may sign from now on, in its role."""

    key_ref: str
    role: str
    vkey: str


@attrs.frozen
class KeyRevoked:
    """``receipts.key_revoked`` v1: a key's signatures are invalid from seq ``from_seq`` on."""

    key_ref: str
    from_seq: int
    reason: str


@attrs.frozen
class CheckpointSigned:
    """``receipts.checkpoint_signed`` v1: a signed tlog checkpoint of the register's tree."""

    size: int
    root: str
    origin: str
    key_ref: str
    note: str


ENTRY_RECORDED = EventType("receipts.entry_recorded", EntryRecorded,
                           description="a signed register entry was recorded")
KEY_REGISTERED = EventType("receipts.key_registered", KeyRegistered,
                           description="an oracle or log public key was registered")
KEY_REVOKED = EventType("receipts.key_revoked", KeyRevoked,
                        description="a key was revoked from a register position on")
CHECKPOINT_SIGNED = EventType("receipts.checkpoint_signed", CheckpointSigned,
                              description="the log key signed a checkpoint of the Merkle tree")
EVENT_TYPES: Final = (ENTRY_RECORDED, KEY_REGISTERED, KEY_REVOKED, CHECKPOINT_SIGNED)
