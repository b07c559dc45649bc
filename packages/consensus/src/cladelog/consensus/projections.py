"""The ``consensus.state`` projection: the ledger folded from the log (pure, no clock).

An input event is decoded (:func:`decode_input`: the signed statements are
verified against the validators' keys in the state) and applied to the
:class:`~cladelog.consensus.ledger.Ledger`; its consequences are kept as
``pending`` and each following consequence event must equal the next one. An
input the rules refuse (only possible when appended by hand, as the commands run
the same check first) is listed under ``ignored`` with its position and reason and
changes nothing; a consequence that does not match is listed under ``anomalies``.

State layout (version 2; version 1 derived no ``proposal_opened``)::

    ledger     the ledger state (cladelog.consensus.ledger.initial_state())
    pending    [[type, data], ...] consequences still expected
    ignored    [{position, type, reason}]
    anomalies  [{position, type, reason}]
"""

from __future__ import annotations

from typing import Any

from cladelog.consensus.errors import ConsensusInputError
from cladelog.consensus.events import CONSEQUENCE_TYPES, INPUT_KINDS, SIGNED_KINDS
from cladelog.consensus.ledger import Consequence, Ledger, initial_state
from cladelog.core import Projection, RecordedEvent

__all__ = ["CONSENSUS_STATE", "PROJECTION_NAME", "apply", "decode_input", "summary"]

PROJECTION_NAME = "consensus.state"
_MAX_LISTED = 1000


def decode_input(event_type: str, data: dict[str, Any],
                 ledger: Ledger) -> tuple[str, dict[str, Any]]:
    """(ledger kind, ledger data) of an input event; signatures verified. Raises
    :class:`ConsensusInputError` with the reason."""
    kind = INPUT_KINDS[event_type]
    if kind in SIGNED_KINDS:
        from cladelog.consensus.signing import open_statement

        predicate, digest = open_statement(data["envelope"], ledger, "envelope")
        if SIGNED_KINDS[predicate["kind"]] != event_type:
            raise ConsensusInputError(f"envelope: a {predicate['kind']} statement cannot be "
                                      f"appended as {event_type}")
        return kind, {**predicate, "digest": digest}
    if kind == "evidence":
        from cladelog.consensus.signing import open_statement

        pair = {}
        for name in ("first", "second"):
            predicate, digest = open_statement(data[name], ledger, name)
            if predicate["kind"] != "vote":
                raise ConsensusInputError(f"{name}: evidence holds vote statements, got a "
                                          f"{predicate['kind']} statement")
            pair[name] = {**predicate, "digest": digest}
        return kind, pair
    if kind == "challenge":
        from cladelog.consensus.statements import check_audit

        return kind, {**data, "audit": check_audit(data["audit"], "audit")}
    return kind, data


def apply_input(ledger: Ledger, event_type: str, data: dict[str, Any]) -> list[Consequence]:
    """Decode and apply one input event (the one path commands and the projection share)."""
    kind, decoded = decode_input(event_type, data, ledger)
    return ledger.apply(kind, decoded)


def _note(state: dict[str, Any], key: str, event: RecordedEvent, reason: str) -> None:
    items = state[key]
    if len(items) < _MAX_LISTED:
        items.append({"position": event.position, "type": event.type, "reason": reason})


def apply(state: dict[str, Any], event: RecordedEvent) -> dict[str, Any]:
    """Fold one event (see the module docstring)."""
    if event.type in CONSEQUENCE_TYPES:
        pending = state["pending"]
        if pending and pending[0] == [event.type, event.data]:
            pending.pop(0)
        else:
            _note(state, "anomalies", event, "consequence not derived from the inputs before it")
        return state
    if state["pending"]:
        missing = ", ".join(t for t, _ in state["pending"])
        _note(state, "anomalies", event, f"consequences missing before this input: {missing}")
        state["pending"] = []
    ledger = Ledger(state["ledger"])
    try:
        out = apply_input(ledger, event.type, event.data)
    except ConsensusInputError as exc:
        _note(state, "ignored", event, str(exc))
        return state
    state["pending"] = [[t, d] for t, d in out]
    return state


def summary(state: dict[str, Any]) -> str:
    ledger = state["ledger"]
    outcomes: dict[str, int] = {}
    for proposal in ledger["proposals"].values():
        outcomes[proposal["outcome"]] = outcomes.get(proposal["outcome"], 0) + 1
    shown = ", ".join(f"{n} {k}" for k, n in sorted(outcomes.items())) or "no proposals"
    return (f"epoch {ledger['epoch']}, {len(ledger['validators'])} validators, {shown}, "
            f"{len(ledger['evidence'])} evidence, {len(state['ignored'])} ignored")


CONSENSUS_STATE = Projection(
    PROJECTION_NAME, 2, frozenset(INPUT_KINDS) | CONSEQUENCE_TYPES,
    {"ledger": initial_state(), "pending": [], "ignored": [], "anomalies": []},
    apply, summary=summary,
    description="validators, stake, proposals, tallies, finality, challenges, slashes",
)
