"""The ``lawv.state`` projection: contracts, measurements, register entries, checks, reviews.

A pure fold (no clock, no I/O). It reads the plugin's own four event types and
the receipts plugin's ``receipts.entry_recorded`` (keeping only what Law V reads
of each entry). An event it cannot accept is never fatal to a replay: it is
listed under ``ignored`` with its position and the reason, and changes nothing
else. A check event is re-evaluated from its recorded inputs as it is folded
(``ledger.reevaluate``); one whose recorded result does not re-derive gets an
anomaly. State layout (version 2)::

    contracts        {"<version>": {version, date, digest, position, document}}
    latest_contract  newest registered version or null
    measurements     {"<id>": {id, version, digest, position, document}}
    register         {entries: {"<seq>": [reduced entry | {seq, unreadable}]},
                      first, head, events, first_position}
    checks           [the check_recorded data + position, anomalies, closes_window]
    closed           {check_id, position, last_seq, new_measurement} of the last
                     check that closed its window (position 0 = none yet)
    reviews          [review data + position]
    halt             {blocked, open: [check ids], kept_halted: [check ids]}
                     (open: HALT or anomalous checks not resumed by a review)
    ignored          [{position, type, reason}]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cladelog.core import Projection, RecordedEvent
from cladelog.core.canonical import canonical_digest
from cladelog.lawv._fields import MAX_COUNT
from cladelog.lawv.errors import LawVInputError
from cladelog.lawv.events import (
    CHECK_RECORDED,
    CHECKS_STREAM,
    CONTRACT_REGISTERED,
    CONTRACTS_STREAM,
    MEASUREMENT_RECORDED,
    MEASUREMENTS_STREAM,
    REGISTER_ENTRY_TYPE,
    REVIEW_RECORDED,
    REVIEWS_STREAM,
    check_id_for,
)
from cladelog.lawv.ledger import (
    closes_window,
    expected_old,
    governing_contract,
    halt_status,
    initial_state,
    reevaluate,
    result_differences,
    reviewable,
    window_opened_at,
    window_start,
)

# The document parsers (contract, measurement, register) are imported by the handlers
# that use them: every deployment that enables lawv builds this projection when it
# opens, and most commands (log, verify, export...) never fold an event through it.

__all__ = ["LAWV_STATE", "PROJECTION_NAME", "apply", "reduce_register_entry", "summary"]

PROJECTION_NAME = "lawv.state"

State = dict[str, Any]


class _Ignore(Exception):
    """The event is not accepted; the message says why."""


def reduce_register_entry(data: Any) -> tuple[int, dict[str, Any]]:
    """(seq, what Law V keeps) of a ``receipts.entry_recorded`` payload.

    The kept form is ``Entry.to_dict()`` (seq, kind, stages of gain tests,
    ``reverts``); an entry Law V cannot read is kept as ``{"seq", "unreadable":
    reason}`` so that a window holding it is DEFECTIVE. Raises ``_Ignore`` when
    the payload has no usable ``seq``.
    """
    from cladelog.lawv.register import parse_entry

    if not isinstance(data, dict):
        raise _Ignore("data: expected an object")
    seq = data.get("seq")
    if type(seq) is not int or not 0 <= seq <= MAX_COUNT:
        raise _Ignore(f"data.seq: must be an integer in [0, 2^53-1], got {seq!r}")
    entry = data.get("entry")
    where = f"register seq {seq}"
    if not isinstance(entry, dict):
        return seq, {"seq": seq, "unreadable": f"{where}: entry: expected an object"}
    kind = data.get("kind")
    for key, top in (("seq", seq), ("kind", kind)):
        if key in entry and entry[key] != top:
            return seq, {"seq": seq,
                         "unreadable": f"{where}: entry.{key} {entry[key]!r} differs from {top!r}"}
    try:
        parsed = parse_entry({**entry, "seq": seq, "kind": kind}, where)
    except LawVInputError as exc:
        return seq, {"seq": seq, "unreadable": str(exc)}
    return seq, parsed.to_dict()


def _on_register(state: State, event: RecordedEvent) -> None:
    seq, kept = reduce_register_entry(event.data)
    register = state["register"]
    variants = register["entries"].setdefault(str(seq), [])
    if kept not in variants:  # an identical repetition changes nothing
        variants.append(kept)
    register["events"] += 1
    if register.get("first_position") is None:
        register["first_position"] = event.position
    if register["first"] is None or seq < register["first"]:
        register["first"] = seq
    if register["head"] is None or seq > register["head"]:
        register["head"] = seq


def _expect_stream(event: RecordedEvent, stream: str) -> None:
    if event.stream != stream:
        raise _Ignore(f"stream: {event.type} belongs on {stream!r}, not {event.stream!r}")


def _on_contract(state: State, event: RecordedEvent) -> None:
    from cladelog.lawv.contract import parse_contract

    _expect_stream(event, CONTRACTS_STREAM)
    doc = parse_contract(event.data, "data").to_dict()
    version = doc["version"]
    digest = canonical_digest(doc)
    existing = state["contracts"].get(str(version))
    if existing is not None:
        same = "an identical" if existing["digest"] == digest else "a different"
        raise _Ignore(f"data.version: {version} is already registered (at position "
                      f"{existing['position']}); {same} document")
    latest = state["latest_contract"]
    if latest is not None and version <= latest:
        raise _Ignore(f"data.version: must be greater than the latest version {latest}, "
                      f"got {version}")
    state["contracts"][str(version)] = {"version": version, "date": doc["date"],
                                        "digest": digest, "position": event.position,
                                        "document": doc}
    state["latest_contract"] = version


def _on_measurement(state: State, event: RecordedEvent) -> None:
    from cladelog.lawv.measurement import parse_measurement

    _expect_stream(event, MEASUREMENTS_STREAM)
    doc = parse_measurement(event.data, "data").to_dict()
    existing = state["measurements"].get(doc["id"])
    if existing is not None:
        raise _Ignore(f"data.id: {doc['id']!r} is already recorded (at position "
                      f"{existing['position']})")
    state["measurements"][doc["id"]] = {"id": doc["id"], "version": doc["version"],
                                        "digest": canonical_digest(doc),
                                        "position": event.position, "document": doc}


def _check_anomalies(state: State, data: dict[str, Any]) -> list[str]:
    """Where a check event disagrees with the rules (it then closes no window)."""
    anomalies: list[str] = []
    opened = window_opened_at(state, empty=data["first_seq"] is None)
    if data["window_opened_at"] != opened:
        anomalies.append(f"window_opened_at: the window opened at {opened}, "
                         f"not {data['window_opened_at']}")
    version = data["contract_version"]
    if str(version) not in state["contracts"]:
        anomalies.append(f"contract_version: {version} is not registered")
    elif version != governing_contract(state, opened):
        anomalies.append(f"contract_version: {governing_contract(state, opened)} governs "
                         f"this check, not {version}")
    elif state["contracts"][str(version)]["digest"] != data["contract_digest"]:
        anomalies.append("contract_digest: does not match the registered contract")
    for key in ("old_measurement", "new_measurement"):
        ident = data[key]
        if ident is not None and ident not in state["measurements"]:
            anomalies.append(f"{key}: {ident!r} is not recorded")
    old = expected_old(state)
    if old is not None and data["old_measurement"] != old:
        anomalies.append(f"old_measurement: must be {old!r} (the new measurement of "
                         f"{state['closed']['check_id']})")
    start = window_start(state)
    if data["first_seq"] is not None and data["first_seq"] != start:
        anomalies.append(f"first_seq: the window starts at {start}, not {data['first_seq']}")
    if data["result"].get("contract_version") != version:
        anomalies.append("result.contract_version: differs from contract_version")
    rederived = _rederivation_anomaly(state, data)
    if rederived is not None:  # first: it is what a reader of the gate's reason needs
        anomalies.insert(0, rederived)
    return anomalies


def _show_r(value: Any) -> str:
    return "-" if not isinstance(value, int | float) or isinstance(value, bool) \
        else f"{value:.6g}"


def _rederivation_anomaly(state: State, data: dict[str, Any]) -> str | None:
    """Run the arithmetic again on the recorded inputs; say where the recorded result differs.

    Deterministic: ``evaluate`` is pure and its Monte Carlo band is seeded from
    the inputs, so every replay reaches the same conclusion.
    """
    try:
        again = reevaluate(state, data).to_dict()
    except (LawVInputError, ArithmeticError, KeyError, TypeError, ValueError) as exc:
        return f"result: cannot be re-derived from the recorded inputs ({exc})"
    recorded = data["result"]
    differing = result_differences(recorded, again)
    if not differing:
        return None
    return (f"result: does not re-derive from the recorded inputs: recorded "
            f"{data['verdict']} R = {_show_r(recorded.get('r'))}, recomputed "
            f"{again['verdict']} R = {_show_r(again['r'])} (differs in "
            f"{', '.join(differing)})")


def _refresh_halt(state: State) -> None:
    state["halt"] = halt_status(state)


def _on_check(state: State, event: RecordedEvent) -> None:
    _expect_stream(event, CHECKS_STREAM)
    data = dict(event.data)
    number = len(state["checks"]) + 1
    if data["number"] != number or data["check_id"] != check_id_for(number):
        raise _Ignore(f"data.number: the next check is number {number}, got {data['number']!r}")
    anomalies = _check_anomalies(state, data)
    check = {**data, "position": event.position, "anomalies": anomalies}
    check["closes_window"] = closes_window(check)
    state["checks"].append(check)
    if check["closes_window"]:
        state["closed"] = {"check_id": check["check_id"], "position": event.position,
                           "last_seq": check["last_seq"],
                           "new_measurement": check["new_measurement"]}
    _refresh_halt(state)


def _on_review(state: State, event: RecordedEvent) -> None:
    _expect_stream(event, REVIEWS_STREAM)
    data = dict(event.data)
    target = next((c for c in state["checks"] if c["check_id"] == data["check_id"]), None)
    if target is None:
        raise _Ignore(f"data.check_id: no check {data['check_id']!r}")
    if not reviewable(target):
        raise _Ignore(f"data.check_id: {data['check_id']} is {target['verdict']} without "
                      "anomalies; only HALT or anomalous checks are reviewed")
    state["reviews"].append({**data, "position": event.position})
    _refresh_halt(state)


_HANDLERS: dict[str, Callable[[State, RecordedEvent], None]] = {
    REGISTER_ENTRY_TYPE: _on_register,
    CONTRACT_REGISTERED.name: _on_contract,
    MEASUREMENT_RECORDED.name: _on_measurement,
    CHECK_RECORDED.name: _on_check,
    REVIEW_RECORDED.name: _on_review,
}


def apply(state: State, event: RecordedEvent) -> State:
    """Fold one event into ``lawv.state`` (pure; an unacceptable event is listed as ignored)."""
    handler = _HANDLERS.get(event.type)
    if handler is None:
        return state
    try:
        handler(state, event)
    except (_Ignore, LawVInputError, KeyError, TypeError, ValueError, AttributeError) as exc:
        state["ignored"].append({"position": event.position, "type": event.type,
                                 "reason": str(exc) or type(exc).__name__})
    return state


def summary(state: State) -> str:
    """One line: how many checks, the last verdict and whether the gate is blocked."""
    checks = state["checks"]
    last = "none"
    if checks:
        last = checks[-1]["verdict"] + (" (anomalous)" if checks[-1]["anomalies"] else "")
    blocked = "BLOCKED by " + ", ".join(state["halt"]["open"]) if state["halt"]["blocked"] \
        else "not blocked"
    return (f"{len(state['contracts'])} contract(s), {len(state['measurements'])} "
            f"measurement(s), {len(checks)} check(s), last {last}, {blocked}")


LAWV_STATE = Projection(
    name=PROJECTION_NAME,
    version=2,
    event_types=frozenset(_HANDLERS),
    initial=initial_state(),
    apply=apply,
    summary=summary,
    description="Law V: contracts, measurements, register window, checks, reviews, halt",
)
