"""cladelog-receipts: signed oracle receipts, the gap-free register and its Merkle log.

The public API is listed in ``__all__`` and imported lazily (the command line
must start fast). Pure pieces: :mod:`.entries` (the entry model and parser),
:mod:`.recompute` (claims vs games), :mod:`.receipt` (DSSE/in-toto receipts),
and the offline verifier :mod:`.verify` with :mod:`.merkle`, :mod:`.dsse`,
:mod:`.note`, :mod:`.proofs`. The application service is :class:`Register`;
event types are in :mod:`.events`, the projection in :mod:`.projections`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cladelog.core import lazy_exports

__version__ = "0.1.0"

_EXPORTS = {
    "ClaimMismatchError": "errors",
    "EntryError": "errors",
    "ReceiptInputError": "errors",
    "ReceiptRefused": "errors",
    "SequenceError": "errors",
    "SignatureRefused": "errors",
    "PREDICATE_TYPE": "entries",
    "Artifact": "entries",
    "EpochChange": "entries",
    "Entry": "entries",
    "FixedCriterion": "entries",
    "GainTest": "entries",
    "OracleRef": "entries",
    "Results": "entries",
    "Reversion": "entries",
    "SpecialPath": "entries",
    "SprtCriterion": "entries",
    "Stage": "entries",
    "entry_hash": "entries",
    "parse_entry": "entries",
    "EntryRecomputation": "recompute",
    "StageRecomputation": "recompute",
    "fill_claims": "recompute",
    "recompute_entry": "recompute",
    "recompute_stage": "recompute",
    "OpenedReceipt": "receipt",
    "make_receipt": "receipt",
    "open_receipt": "receipt",
    "receipt_leaf": "receipt",
    "EntryRecorded": "events",
    "CheckpointSigned": "events",
    "KeyRegistered": "events",
    "KeyRevoked": "events",
    "entries_in_window": "projections",
    "latest_checkpoint": "projections",
    "key_is_valid": "projections",
    "PreparedEntry": "register",
    "Register": "register",
    "RegisterReport": "register",
    "check_receipt": "register",
    "load_signer_file": "register",
    "ReceiptsSettings": "settings",
    "generate_key": "note",
    "parse_signer_key": "note",
    "parse_verifier_key": "note",
    "VerificationError": "verify",
    "verify_consistency_proof": "verify",
    "verify_inclusion_proof": "verify",
    "verify_receipt": "verify",
}

__all__ = [
    "PREDICATE_TYPE",
    "Artifact",
    "CheckpointSigned",
    "ClaimMismatchError",
    "Entry",
    "EntryError",
    "EntryRecomputation",
    "EntryRecorded",
    "EpochChange",
    "FixedCriterion",
    "GainTest",
    "KeyRegistered",
    "KeyRevoked",
    "OpenedReceipt",
    "OracleRef",
    "PreparedEntry",
    "ReceiptInputError",
    "ReceiptRefused",
    "ReceiptsSettings",
    "Register",
    "RegisterReport",
    "Results",
    "Reversion",
    "SequenceError",
    "SignatureRefused",
    "SpecialPath",
    "SprtCriterion",
    "Stage",
    "StageRecomputation",
    "VerificationError",
    "__version__",
    "check_receipt",
    "entries_in_window",
    "entry_hash",
    "fill_claims",
    "generate_key",
    "key_is_valid",
    "latest_checkpoint",
    "load_signer_file",
    "make_receipt",
    "open_receipt",
    "parse_entry",
    "parse_signer_key",
    "parse_verifier_key",
    "receipt_leaf",
    "recompute_entry",
    "recompute_stage",
    "verify_consistency_proof",
    "verify_inclusion_proof",
    "verify_receipt",
]

if TYPE_CHECKING:
    from .entries import (
        PREDICATE_TYPE,
        Artifact,
        Entry,
        EpochChange,
        FixedCriterion,
        GainTest,
        OracleRef,
        Results,
        Reversion,
        SpecialPath,
        SprtCriterion,
        Stage,
        entry_hash,
        parse_entry,
    )
    from .errors import (
        ClaimMismatchError,
        EntryError,
        ReceiptInputError,
        ReceiptRefused,
        SequenceError,
        SignatureRefused,
    )
    from .events import CheckpointSigned, EntryRecorded, KeyRegistered, KeyRevoked
    from .note import generate_key, parse_signer_key, parse_verifier_key
    from .projections import entries_in_window, key_is_valid, latest_checkpoint
    from .receipt import OpenedReceipt, make_receipt, open_receipt, receipt_leaf
    from .recompute import (
        EntryRecomputation,
        StageRecomputation,
        fill_claims,
        recompute_entry,
        recompute_stage,
    )
    from .register import (
        PreparedEntry,
        Register,
        RegisterReport,
        check_receipt,
        load_signer_file,
    )
    from .settings import ReceiptsSettings
    from .verify import (
        VerificationError,
        verify_consistency_proof,
        verify_inclusion_proof,
        verify_receipt,
    )


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
