"""cladelog-receipts: signed oracle receipts, the gap-free register and its Merkle log.

The public API is listed once, as the ``from .module import name as name`` lines
below (``__all__`` and the lazy loader are read from them), and imported lazily
(the command line must start fast). Pure pieces: :mod:`.entries` (the entry model
and parser), :mod:`.recompute` (claims vs games), :mod:`.receipt` (DSSE/in-toto receipts),
and the offline verifier :mod:`.verify` with :mod:`.merkle`, :mod:`.dsse`,
:mod:`.note`, :mod:`.proofs`. The application service is :class:`Register`;
event types are in :mod:`.events`, the projection in :mod:`.projections`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cladelog.core import exports_from_source, lazy_exports

__version__ = "0.1.0"

if TYPE_CHECKING:  # the export list, written once: one public name a line
    from .entries import PREDICATE_TYPE as PREDICATE_TYPE
    from .entries import Artifact as Artifact
    from .entries import Entry as Entry
    from .entries import EpochChange as EpochChange
    from .entries import FixedCriterion as FixedCriterion
    from .entries import GainTest as GainTest
    from .entries import OracleRef as OracleRef
    from .entries import Results as Results
    from .entries import Reversion as Reversion
    from .entries import SpecialPath as SpecialPath
    from .entries import SprtCriterion as SprtCriterion
    from .entries import Stage as Stage
    from .entries import entry_hash as entry_hash
    from .entries import parse_entry as parse_entry
    from .errors import ClaimMismatchError as ClaimMismatchError
    from .errors import EntryError as EntryError
    from .errors import ReceiptInputError as ReceiptInputError
    from .errors import ReceiptRefused as ReceiptRefused
    from .errors import SequenceError as SequenceError
    from .errors import SignatureRefused as SignatureRefused
    from .events import CheckpointSigned as CheckpointSigned
    from .events import EntryRecorded as EntryRecorded
    from .events import KeyRegistered as KeyRegistered
    from .events import KeyRevoked as KeyRevoked
    from .note import generate_key as generate_key
    from .note import parse_signer_key as parse_signer_key
    from .note import parse_verifier_key as parse_verifier_key
    from .projections import entries_in_window as entries_in_window
    from .projections import key_is_valid as key_is_valid
    from .projections import latest_checkpoint as latest_checkpoint
    from .receipt import OpenedReceipt as OpenedReceipt
    from .receipt import make_receipt as make_receipt
    from .receipt import open_receipt as open_receipt
    from .receipt import receipt_leaf as receipt_leaf
    from .recompute import EntryRecomputation as EntryRecomputation
    from .recompute import StageRecomputation as StageRecomputation
    from .recompute import recompute_entry as recompute_entry
    from .recompute import recompute_stage as recompute_stage
    from .register import PreparedEntry as PreparedEntry
    from .register import Register as Register
    from .register import RegisterReport as RegisterReport
    from .register import check_receipt as check_receipt
    from .register import load_signer_file as load_signer_file
    from .settings import ReceiptsSettings as ReceiptsSettings
    from .verify import VerificationError as VerificationError
    from .verify import verify_consistency_proof as verify_consistency_proof
    from .verify import verify_inclusion_proof as verify_inclusion_proof
    from .verify import verify_receipt as verify_receipt


_EXPORTS = exports_from_source(__file__)
__all__ = [*_EXPORTS, "__version__"]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
