"""The lawv domain commands: validate completely against the replayed state, then append.

Each command reads ``lawv.state``, decides, and appends one atomic batch guarded
by the expected versions of the lawv streams it depends on (a concurrent writer
makes the append fail with nothing written). Bad input raises
:class:`~cladelog.lawv.errors.LawVInputError` whose message starts with the
path (a file, an option or a field) and nothing is appended.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
from cladelog.core import Deployment, NewEvent, RecordedEvent
from cladelog.core.canonical import canonical_digest
from cladelog.lawv._fields import fail
from cladelog.lawv.contract import parse_contract
from cladelog.lawv.errors import LawVInputError
from cladelog.lawv.events import (
    CHECK_RECORDED,
    CHECKS_STREAM,
    CONTRACT_REGISTERED,
    CONTRACTS_STREAM,
    DECISIONS,
    MEASUREMENT_RECORDED,
    MEASUREMENTS_STREAM,
    REVIEW_RECORDED,
    REVIEWS_STREAM,
    CheckRecorded,
    ContractRegistered,
    MeasurementRecorded,
    ReviewRecorded,
    _check_review_text,
    check_id_for,
)
from cladelog.lawv.ledger import (
    expected_old,
    find_check,
    governing_contract,
    reviewable,
    select_window,
    window_opened_at,
)
from cladelog.lawv.measurement import parse_measurement
from cladelog.lawv.projections import PROJECTION_NAME
from cladelog.lawv.result import CheckResult

__all__ = [
    "CheckOutcome",
    "MeasurementInput",
    "Outcome",
    "add_contract",
    "add_measurement",
    "add_review",
    "run_check",
]


@attrs.frozen
class Outcome:
    """What a command did: ``key`` (version, id...), whether it appended, and the events."""

    key: str
    appended: bool
    events: tuple[RecordedEvent, ...] = ()


@attrs.frozen
class MeasurementInput:
    """A ``--old``/``--new`` argument: a document read from ``source`` or a recorded id."""

    source: str
    document: Any = None
    ref: str | None = None


@attrs.frozen
class CheckOutcome:
    """A recorded check: its state entry (as the projection holds it) and the result."""

    check: dict[str, Any]
    result: CheckResult
    events: tuple[RecordedEvent, ...]


def _read_state(dep: Deployment, streams: Sequence[str]) -> tuple[dict[str, Any], dict[str, int]]:
    """Stream versions first, then the state: a concurrent append can only make ours fail."""
    versions = {stream: dep.store.stream_version(stream) for stream in streams}
    return dep.state(PROJECTION_NAME), versions


def add_contract(dep: Deployment, document: Any, *, source: str) -> Outcome:
    """Register a contract version. Identical re-registration is a no-op; versions must rise."""
    try:
        doc = parse_contract(document, "contract").to_dict()
    except LawVInputError as exc:
        raise LawVInputError(f"{source}: {exc}") from None
    state, versions = _read_state(dep, [CONTRACTS_STREAM])
    version = doc["version"]
    existing = state["contracts"].get(str(version))
    if existing is not None:
        if existing["digest"] == canonical_digest(doc):
            return Outcome(str(version), False)
        raise fail(f"{source}: contract.version",
                   f"{version} is already registered with other content (versions are immutable)")
    latest = state["latest_contract"]
    if latest is not None and version <= latest:
        raise fail(f"{source}: contract.version",
                   f"must be greater than the latest registered version {latest}", version)
    event = NewEvent(CONTRACTS_STREAM, CONTRACT_REGISTERED.name, ContractRegistered(**{
        key: doc[key] for key in ("version", "date", "T", "transfer_band", "halt_below",
                                  "warn_below", "mc_samples", "anchors")}))
    recorded = dep.append([event], expected_versions=versions)
    return Outcome(str(version), True, tuple(recorded))


def _measurement_event(doc: Mapping[str, Any]) -> NewEvent:
    payload = MeasurementRecorded(id=doc["id"], version=doc["version"],
                                  anchors=list(doc["anchors"]))
    return NewEvent(MEASUREMENTS_STREAM, MEASUREMENT_RECORDED.name, payload)


def _normalized_measurement(
    document: Any, source: str, known: Mapping[str, Any]
) -> tuple[dict[str, Any], bool]:
    """(normalized document, is new): refuses an id already recorded with other content."""
    try:
        doc = parse_measurement(document, "measurement").to_dict()
    except LawVInputError as exc:
        raise LawVInputError(f"{source}: {exc}") from None
    if not doc["id"].strip():
        raise fail(f"{source}: measurement.id", "must not be empty")
    existing = known.get(doc["id"])
    if existing is not None:
        if existing["digest"] != canonical_digest(doc):
            raise fail(f"{source}: measurement.id",
                       f"{doc['id']!r} is already recorded with other content")
        return doc, False
    return doc, True


def add_measurement(dep: Deployment, document: Any, *, source: str) -> Outcome:
    """Record an anchor measurement; recording the identical document again is a no-op."""
    state, versions = _read_state(dep, [MEASUREMENTS_STREAM])
    doc, new = _normalized_measurement(document, source, state["measurements"])
    if not new:
        return Outcome(doc["id"], False)
    recorded = dep.append([_measurement_event(doc)], expected_versions=versions)
    return Outcome(doc["id"], True, tuple(recorded))


def _resolve(
    arg: MeasurementInput | None, label: str, known: dict[str, Any], pending: list[NewEvent]
) -> dict[str, Any] | None:
    if arg is None:
        return None
    if arg.ref is not None:
        found = known.get(arg.ref)
        if found is None:
            raise fail(label, f"no such file and no recorded measurement {arg.ref!r}")
        return dict(found["document"])
    doc, new = _normalized_measurement(arg.document, arg.source, known)
    if new:
        pending.append(_measurement_event(doc))
        known[doc["id"]] = {"digest": canonical_digest(doc), "document": doc}
    return doc


def run_check(
    dep: Deployment,
    *,
    old: MeasurementInput | None = None,
    new: MeasurementInput | None = None,
    to_seq: int | None = None,
) -> CheckOutcome:
    """Run and record the next Law V check.

    ``old`` defaults to the new measurement of the last check that closed its
    window (see :mod:`cladelog.lawv.ledger`); a missing measurement makes a GAP.
    Measurement files are recorded in the same batch as the check.
    """
    from cladelog.lawv.evaluate import evaluate

    state, versions = _read_state(dep, [CONTRACTS_STREAM, MEASUREMENTS_STREAM, CHECKS_STREAM])
    known = dict(state["measurements"])
    pending: list[NewEvent] = []
    old_doc = _resolve(old, "--old", known, pending)
    new_doc = _resolve(new, "--new", known, pending)
    previous = expected_old(state)
    if old_doc is None and previous is not None:
        old_doc = dict(known[previous]["document"])
    if previous is not None and old_doc is not None and old_doc["id"] != previous:
        raise fail("--old", f"must be {previous!r}, the new measurement of "
                            f"{state['closed']['check_id']} (the last check with a verdict)",
                   old_doc["id"])
    if old_doc is not None and new_doc is not None and old_doc["id"] == new_doc["id"]:
        raise fail("--new", f"is the same measurement as --old ({old_doc['id']!r})")
    selection = select_window(state, to_seq)
    opened_at = window_opened_at(state, empty=selection.window is None)
    version = governing_contract(state, opened_at)
    if version is None:
        raise fail("contract", "no Law V contract is registered (cladelog lawv contract add FILE)")
    contract = state["contracts"][str(version)]
    result = evaluate(contract["document"], old_doc, new_doc, list(selection.entries),
                      window=selection.window)
    number = len(state["checks"]) + 1
    payload = CheckRecorded(
        check_id=check_id_for(number),
        number=number,
        contract_version=version,
        contract_digest=contract["digest"],
        old_measurement=None if old_doc is None else old_doc["id"],
        new_measurement=None if new_doc is None else new_doc["id"],
        window_opened_at=opened_at,
        first_seq=selection.first_seq,
        last_seq=selection.last_seq,
        entry_seqs=list(selection.entry_seqs),
        unreadable_seqs=[seq for seq, _ in selection.unreadable],
        verdict=result.verdict,
        result=result.to_dict(),
    )
    events = [*pending, NewEvent(CHECKS_STREAM, CHECK_RECORDED.name, payload)]
    recorded = dep.append(events, expected_versions=versions, correlation_id=payload.check_id)
    check = find_check(dep.state(PROJECTION_NAME), payload.check_id)
    if check is None:  # pragma: no cover - the projection accepts what run_check writes
        raise LawVInputError(f"{payload.check_id}: recorded but not accepted by lawv.state")
    return CheckOutcome(check, result, tuple(recorded))


def add_review(
    dep: Deployment, *, check: str, decision: str, reviewer: str, reason: str
) -> Outcome:
    """Record a human review of a HALT or anomalous check (``resume`` or ``keep-halted``).

    ``reviewer`` is a name: one line without control characters; ``reason`` may
    span lines (newline and tab) but holds no other control character.
    """
    if decision not in DECISIONS:
        raise fail("--decision", f"must be one of {', '.join(DECISIONS)}", decision)
    _check_review_text(reviewer, reason, prefix="--")
    state = dep.state(PROJECTION_NAME)
    target = find_check(state, check)
    if target is None:
        raise fail("--check", "no such check", check)
    if not reviewable(target):
        raise fail("--check", f"{target['check_id']} is {target['verdict']}; only HALT checks "
                              "and checks with anomalies are reviewed")
    payload = ReviewRecorded(check_id=target["check_id"], decision=decision,
                             reviewer=reviewer, reason=reason)
    recorded = dep.append([NewEvent(REVIEWS_STREAM, REVIEW_RECORDED.name, payload)])
    return Outcome(target["check_id"], True, tuple(recorded))
