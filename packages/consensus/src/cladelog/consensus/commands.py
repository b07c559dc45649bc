"""Domain commands: check an input against the replayed state, then append it with its
consequences in one atomic batch (a refused input appends nothing).

The check is the projection's own path (:func:`cladelog.consensus.projections.apply_input`)
run on a copy of the current ledger, so a command refuses exactly what the
projection would ignore, with the same reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from cladelog.consensus.errors import ConsensusInputError
from cladelog.consensus.events import SIGNED_KINDS, STREAM
from cladelog.consensus.ledger import Consequence, Ledger
from cladelog.consensus.projections import PROJECTION_NAME, apply_input

__all__ = [
    "append_inputs",
    "audit_document",
    "current_ledger",
    "input_for_envelope",
    "load_audit_inputs",
    "prepare_inputs",
    "run_audit",
]


def current_ledger(deployment: Any) -> Ledger:
    """A ledger over a private copy of the replayed ``consensus.state``."""
    import copy

    state = deployment.state(PROJECTION_NAME)
    return Ledger(copy.deepcopy(state["ledger"]))


def prepare_inputs(ledger: Ledger, inputs: Sequence[tuple[str, dict[str, Any]]],
                   *, actor: str | None = None) -> tuple[list[Any], list[Consequence]]:
    """Apply every input in order to ``ledger`` (a private copy: it is left changed, even
    when an input is refused); return the events to append (each input followed by its
    consequences) and the consequences, or raise naming the first refused input."""
    from cladelog.core import NewEvent

    events: list[Any] = []
    consequences: list[Consequence] = []
    meta = {} if actor is None else {"actor": actor}
    for index, (event_type, data) in enumerate(inputs):
        try:
            out = apply_input(ledger, event_type, data)
        except ConsensusInputError as exc:
            where = "" if len(inputs) == 1 else f"input {index + 1}: "
            raise ConsensusInputError(f"{where}{exc}") from None
        events.append(NewEvent(STREAM, event_type, data, meta=dict(meta)))
        events.extend(NewEvent(STREAM, t, d, meta=dict(meta)) for t, d in out)
        consequences.extend(out)
    return events, consequences


def append_inputs(deployment: Any, inputs: Sequence[tuple[str, dict[str, Any]]],
                  *, actor: str | None = None) -> list[Consequence]:
    """Check every input in order on a copy of the state; append them all (each followed
    by its consequences) in one batch, or raise naming the first refused one."""
    events, consequences = prepare_inputs(current_ledger(deployment), inputs, actor=actor)
    deployment.append(events)
    return consequences


def input_for_envelope(envelope: Any, where: str = "envelope") -> tuple[str, dict[str, Any]]:
    """(input event type, data) of a signed statement file's envelope, by its kind.

    Only the kind is read here (unverified); verification happens when the input is
    applied, with the validators' keys.
    """
    from cladelog.consensus.signing import peek_kind

    kind = peek_kind(envelope, where)
    return SIGNED_KINDS[kind], {"envelope": envelope}


def audit_document(parent: Any, child: Any, weights: Any = None,
                   scalars: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The audit inputs document whose canonical digest is a proposal's eval digest."""
    return {"parent": parent, "child": child, "weights": weights,
            "scalars": dict(scalars or {})}


def load_audit_inputs(path: str, digest: str | None = None) -> tuple[dict[str, Any], str]:
    """Read an audit inputs document (a file, or ``<digest>.json`` in a directory);
    return it and its digest, refusing one whose digest differs from ``digest``."""
    from pathlib import Path

    from cladelog.core import canonical_digest, read_json_file

    chosen = Path(path)
    if chosen.is_dir():
        if digest is None:
            raise ConsensusInputError(f"--inputs: {path} is a directory; give the file")
        chosen = chosen / f"{digest}.json"
        if not chosen.is_file():
            raise ConsensusInputError(f"--inputs: {path} holds no {digest}.json")
    document = read_json_file(str(chosen))
    if not isinstance(document, dict) or set(document) != {"parent", "child", "weights",
                                                            "scalars"}:
        raise ConsensusInputError(f"--inputs: {chosen} must be an object with exactly parent, "
                                  "child, weights, scalars")
    found = canonical_digest(document)
    if digest is not None and found != digest:
        raise ConsensusInputError(f"--inputs: the digest of {chosen} is {found}, not the "
                                  f"proposal's eval digest {digest}")
    return document, found


def run_audit(deployment: Any, document: Mapping[str, Any]) -> dict[str, Any]:
    """The audit replay through the ``consensus_audit`` hook (fork-score implements it)."""
    from cladelog.consensus.statements import check_audit

    hook = deployment.pm.hook.consensus_audit
    if not hook.get_hookimpls():
        raise ConsensusInputError("audit: no enabled plugin implements consensus_audit "
                                  "(enable fork-score)")
    try:
        result = hook(document=document)
    except (ValueError, TypeError) as exc:  # the auditor's input errors name the field
        raise ConsensusInputError(f"audit: {exc}") from None
    if result is None:
        raise ConsensusInputError("audit: no plugin could audit these inputs")
    return check_audit(result, "audit")


def tally_rows(ledger: Ledger) -> Iterable[dict[str, Any]]:
    """One row per validator for ``status``: state, stake, power (in a set frozen now),
    votes, misses, rewards, slashes, jail end, unbonding (requested, earliest end of epoch;
    later while a proposal it is frozen into is still open to challenge or evidence)."""
    from cladelog.consensus.power import frozen_powers

    state = ledger.state
    policy = ledger.policy() if state["policy"] is not None else None
    stakes = {v: r["stake"] for v, r in sorted(state["validators"].items())
              if ledger.eligible(r)}
    powers = ({} if policy is None else
              frozen_powers(stakes, policy.weighting, policy.cap))
    for vid, record in sorted(state["validators"].items()):
        if record["tombstoned"]:
            shown = "slashed"
        elif record["jailed"]:
            shown = "jailed"
        else:
            shown = record["status"]
        requested = record["unbond_requested"]
        yield {"validator": vid, "state": shown, "stake": record["stake"],
               "power": powers.get(vid, 0), "votes": record["votes"],
               "misses": record["misses"], "rewards": record["rewards"],
               "slashed": sum(s["amount"] for s in record["slashes"]),
               "slashes": record["slashes"], "jailed_until": record["jailed_until"],
               "unbond_requested": requested,
               "unbond_earliest": (None if requested is None or record["status"] != "unbonding"
                                   else requested + record["unbonding_period"] - 1),
               "withdrawn": record["withdrawn"]}
