"""The event types of the lawv plugin: their payload classes and streams (a public contract).

Every payload is an attrs class; core checks the JSON types strictly on append
and each class re-checks its own meaning in ``__attrs_post_init__`` (a contract
must parse as a contract, a decision must be ``resume`` or ``keep-halted``...),
so a malformed lawv event is refused even when it is appended by hand with
``cladelog append``. All four types are at schema version 1; the field lists
are documented in the package README.
"""

from __future__ import annotations

import unicodedata
from typing import Any

import attrs
from cladelog.core import EventType
from cladelog.lawv._fields import fail
from cladelog.lawv.traffic import VERDICTS

# The document parsers are imported where a payload is checked: every deployment
# that enables lawv imports this module when it opens, most never append a lawv event.

__all__ = [
    "CHECKS_STREAM",
    "CHECK_RECORDED",
    "CONTRACTS_STREAM",
    "CONTRACT_REGISTERED",
    "DECISIONS",
    "EVENT_TYPES",
    "MEASUREMENTS_STREAM",
    "MEASUREMENT_RECORDED",
    "REGISTER_ENTRY_TYPE",
    "REVIEWS_STREAM",
    "REVIEW_RECORDED",
    "CheckRecorded",
    "ContractRegistered",
    "MeasurementRecorded",
    "ReviewRecorded",
    "check_id_for",
]

CONTRACTS_STREAM = "lawv.contracts"
MEASUREMENTS_STREAM = "lawv.measurements"
CHECKS_STREAM = "lawv.checks"
REVIEWS_STREAM = "lawv.reviews"

#: The receipts plugin's event type that carries register entries (read, never written).
REGISTER_ENTRY_TYPE = "receipts.entry_recorded"

#: The decisions a human review can record.
DECISIONS = ("resume", "keep-halted")

_MAX_TEXT = 2000


def check_id_for(number: int) -> str:
    """The id of the ``number``-th check (1-based): ``check-<number>``."""
    return f"check-{number}"


def _text(value: str, path: str, *, limit: int = _MAX_TEXT) -> None:
    if not value.strip():
        raise fail(path, "must not be empty")
    if len(value) > limit:
        raise fail(path, f"must be at most {limit} characters long")


def _control(char: str) -> bool:
    """True for a control character: C0/C1 (Cc), format (Cf: bidi overrides,
    zero-width...) and the line/paragraph separators (Zl, Zp)."""
    return unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp")


def _no_controls(value: str, path: str, *, allow: str = "") -> None:
    """Refuse a control character in ``value`` (except those in ``allow``), naming the first."""
    for index, char in enumerate(value):
        if char not in allow and _control(char):
            raise fail(path, f"must not contain control characters (U+{ord(char):04X} at "
                             f"index {index})")


def _check_review_text(reviewer: str, reason: str, *, prefix: str = "data.") -> None:
    """The reviewer is one line of at most 200 characters without control characters;
    the reason may hold newlines and tabs but no other control character."""
    _text(reviewer, f"{prefix}reviewer", limit=200)
    _no_controls(reviewer, f"{prefix}reviewer")
    _text(reason, f"{prefix}reason")
    _no_controls(reason, f"{prefix}reason", allow="\n\t")


@attrs.frozen
class ContractRegistered:
    """``lawv.contract_registered`` v1, stream ``lawv.contracts``: one contract version.

    The data *is* the contract document in its documented JSON form (normalized:
    numbers as parsed). Versions must increase along the log; the plugin checks
    that on the command side and the projection ignores a version that does not.
    """

    version: int
    date: str
    T: float
    transfer_band: float
    halt_below: float
    warn_below: float
    mc_samples: int
    anchors: list[dict[str, Any]]

    def __attrs_post_init__(self) -> None:
        from cladelog.lawv.contract import parse_contract

        parse_contract(self.document(), "data")

    def document(self) -> dict[str, Any]:
        """The contract document (the JSON form ``parse_contract`` reads)."""
        return {
            "version": self.version,
            "date": self.date,
            "T": self.T,
            "transfer_band": self.transfer_band,
            "halt_below": self.halt_below,
            "warn_below": self.warn_below,
            "mc_samples": self.mc_samples,
            "anchors": self.anchors,
        }


@attrs.frozen
class MeasurementRecorded:
    """``lawv.measurement_recorded`` v1, stream ``lawv.measurements``: one anchor measurement.

    The data *is* the measurement document (``id``, ``version``, ``anchors``),
    normalized as parsed. Ids are unique along the log.
    """

    id: str
    version: str
    anchors: list[dict[str, Any]]

    def __attrs_post_init__(self) -> None:
        from cladelog.lawv.measurement import parse_measurement

        parse_measurement(self.document(), "data")
        _text(self.id, "data.id", limit=200)

    def document(self) -> dict[str, Any]:
        """The measurement document (the JSON form ``parse_measurement`` reads)."""
        return {"id": self.id, "version": self.version, "anchors": self.anchors}


@attrs.frozen
class CheckRecorded:
    """``lawv.check_recorded`` v1, stream ``lawv.checks``: one Law V check.

    Inputs, by reference: ``contract_version`` (+ ``contract_digest``, the hex
    SHA-256 of its canonical JSON), the ``old_measurement`` / ``new_measurement``
    ids (None = missing), ``window_opened_at`` (the log position at which the
    window opened: the check that closed the previous window; for the first
    window the first register entry; 0 while no entry was registered, i.e. for
    an empty first window), the window ``first_seq`` .. ``last_seq`` (both None for an empty
    window), ``entry_seqs`` (the register entries given to the arithmetic) and
    ``unreadable_seqs`` (entries in the window Law V could not read; left out, so
    the check is DEFECTIVE). Output: ``verdict`` and ``result``, the complete
    ``CheckResult.to_dict()``. The projection re-derives ``result`` from the
    recorded inputs; a result that does not re-derive is an anomaly.
    """

    check_id: str
    number: int
    contract_version: int
    contract_digest: str
    old_measurement: str | None
    new_measurement: str | None
    window_opened_at: int
    first_seq: int | None
    last_seq: int | None
    entry_seqs: list[int]
    unreadable_seqs: list[int]
    verdict: str
    result: dict[str, Any]

    def __attrs_post_init__(self) -> None:
        if self.number < 1:
            raise fail("data.number", "must be >= 1", self.number)
        if self.check_id != check_id_for(self.number):
            raise fail("data.check_id", f"must be {check_id_for(self.number)!r}", self.check_id)
        if self.verdict not in VERDICTS:
            raise fail("data.verdict", f"must be one of {', '.join(VERDICTS)}", self.verdict)
        if self.result.get("verdict") != self.verdict:
            raise fail("data.result.verdict", f"must equal data.verdict ({self.verdict})")
        if (self.first_seq is None) != (self.last_seq is None):
            raise fail("data.last_seq", "first_seq and last_seq are both set or both null")
        if self.first_seq is not None and self.last_seq is not None:
            if self.first_seq > self.last_seq:
                raise fail("data.first_seq", f"must be <= last_seq ({self.last_seq})")
        elif self.entry_seqs or self.unreadable_seqs:
            raise fail("data.entry_seqs", "must be empty for an empty window")


@attrs.frozen
class ReviewRecorded:
    """``lawv.review_recorded`` v1, stream ``lawv.reviews``: a human review of a HALT check.

    ``decision`` is ``resume`` (the halt no longer blocks) or ``keep-halted``.
    The target is a HALT check or a check with anomalies. ``reviewer`` is one
    line (no control character); ``reason`` may hold newlines and tabs but no
    other control character.
    """

    check_id: str
    decision: str
    reviewer: str
    reason: str

    def __attrs_post_init__(self) -> None:
        if self.decision not in DECISIONS:
            raise fail("data.decision", f"must be one of {', '.join(DECISIONS)}", self.decision)
        _check_review_text(self.reviewer, self.reason)


CONTRACT_REGISTERED = EventType(
    "lawv.contract_registered", ContractRegistered,
    description="a Law V contract version was registered",
)
MEASUREMENT_RECORDED = EventType(
    "lawv.measurement_recorded", MeasurementRecorded,
    description="an anchor measurement of a main version was recorded",
)
CHECK_RECORDED = EventType(
    "lawv.check_recorded", CheckRecorded,
    description="a Law V check with all its inputs and numbers",
)
REVIEW_RECORDED = EventType(
    "lawv.review_recorded", ReviewRecorded,
    description="a human review of a HALT check",
)

#: Every event type the plugin writes.
EVENT_TYPES = (CONTRACT_REGISTERED, MEASUREMENT_RECORDED, CHECK_RECORDED, REVIEW_RECORDED)
