"""The exceptions of the receipts plugin and the exit codes they map to.

Every class is a :class:`ValueError`. The ``cladelog`` command line maps
:class:`ReceiptInputError` (bad input: a malformed file, entry or argument, a
sequence gap) to exit 2 and :class:`ReceiptRefused` (a well-formed receipt that
does not verify: bad or unknown signature, claims that disagree with the games,
an inconsistent checkpoint) to exit 1. Messages are one line and start with
the field path or the register position concerned.
"""

from __future__ import annotations

from cladelog.core import InputError, VerificationError

__all__ = [
    "ClaimMismatchError",
    "EntryError",
    "ReceiptInputError",
    "ReceiptRefused",
    "SequenceError",
    "SignatureRefused",
]


class ReceiptInputError(InputError):
    """Bad input (exit 2): a malformed receipt, entry, key, proof file or argument."""


class EntryError(ReceiptInputError):
    """A register entry does not follow its schema; the message names the field path."""


class SequenceError(ReceiptInputError):
    """An entry is not the next one of the register (gap, duplicate, wrong ``prev``)."""


class ReceiptRefused(VerificationError, ValueError):
    """Something well-formed failed a check (exit 1); a refused recording appends nothing."""


class SignatureRefused(ReceiptRefused):
    """A receipt or checkpoint is not signed by a registered, unrevoked key."""


class ClaimMismatchError(ReceiptRefused):
    """A receipt's claims disagree with the recomputation from its games.

    ``flags`` holds the mismatch flags (``ELO_MISMATCH``, ``LLR_MISMATCH``,
    ``STAGE_VERDICT_MISMATCH``, ``EPOCH_MISMATCH``).
    """

    def __init__(self, message: str, flags: tuple[str, ...]) -> None:
        super().__init__(message)
        self.flags = flags
