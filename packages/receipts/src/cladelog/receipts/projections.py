"""The ``receipts.register`` projection and its read functions.

A pure fold over the plugin's four event types. State (version 1)::

    entries      {"<seq>": summary}  -- seq, kind, position, prev, entry_hash, leaf_hash,
                                        flags, keyids, and by kind: candidate, baseline,
                                        oracle, epoch, stages [{name, elo, half_width,
                                        nelo?, pass}], pass (both stages), path, reverts
    size         number of entries (= the next seq)
    head         entry hash of the last entry (64 zeros when empty)
    keys         {"<name+hexkeyid>": {role, vkey, position, revoked_from, reason}}
    checkpoints  [{size, root, origin, key_ref, note, position}], oldest first
    epochs       {"<oracle name>": current epoch}
    reverted     {"<seq>": seq of the reversion entry}
    anomalies    [{position, type, reason}] -- events the register itself would never
                 have written (seq out of order, broken prev, unknown key...), kept
                 out of the state and listed here

Read functions: :func:`entries_in_window` (the entries ``i < seq <= j``),
:func:`latest_checkpoint`, :func:`key_is_valid`.
"""

from __future__ import annotations

from typing import Any, Final

from cladelog.core import Projection, RecordedEvent

from .entries import GENESIS_PREV, entry_hash
from .errors import EntryError, ReceiptInputError
from .events import CHECKPOINT_SIGNED, ENTRY_RECORDED, KEY_REGISTERED, KEY_REVOKED

__all__ = [
    "PROJECTION_NAME",
    "REGISTER_PROJECTION",
    "apply",
    "entries_in_window",
    "initial_state",
    "key_is_valid",
    "latest_checkpoint",
    "summary",
]

PROJECTION_NAME: Final = "receipts.register"
State = dict[str, Any]


def initial_state() -> State:
    """The empty register."""
    return {"entries": {}, "size": 0, "head": GENESIS_PREV, "keys": {}, "checkpoints": [],
            "epochs": {}, "reverted": {}, "anomalies": []}


class _Anomaly(Exception):
    pass


def _summary(data: dict[str, Any], position: int, digest: str | None = None) -> dict[str, Any]:
    entry = data["entry"]
    keyids = sorted({str(s["keyid"]) for s in data["envelope"].get("signatures", [])
                     if isinstance(s, dict) and isinstance(s.get("keyid"), str)})
    out: dict[str, Any] = {
        "seq": data["seq"], "kind": data["kind"], "position": position,
        "prev": entry.get("prev"), "entry_hash": entry_hash(entry) if digest is None else digest,
        "leaf_hash": data["leaf_hash"], "flags": list(data["flags"]), "keyids": keyids,
    }
    for key in ("candidate", "baseline", "oracle", "epoch", "path", "reverts"):
        if key in entry:
            out[key] = entry[key]
    if data["kind"] == "gain_test":
        stages = []
        for s in entry.get("stages", []):
            if isinstance(s, dict):
                kept = {k: s[k] for k in ("name", "elo", "half_width", "nelo", "pass") if k in s}
                stages.append(kept)
        out["stages"] = stages
        out["pass"] = bool(stages) and all(s.get("pass") is True for s in stages)
    return out


def _on_entry(state: State, event: RecordedEvent, digest: str | None = None) -> None:
    data = event.data
    seq, entry = data["seq"], data["entry"]
    if seq != state["size"]:
        raise _Anomaly(f"seq {seq} is not the next seq {state['size']}")
    if entry.get("seq") != seq or entry.get("kind") != data["kind"]:
        raise _Anomaly(f"seq {seq}: entry.seq/kind differ from the event's")
    if entry.get("prev") != state["head"]:
        raise _Anomaly(f"seq {seq}: prev does not link to the previous entry")
    try:
        kept = _summary(data, event.position, digest)
    except (EntryError, ReceiptInputError, AttributeError, TypeError) as exc:
        raise _Anomaly(f"seq {seq}: unreadable entry ({exc})") from None
    state["entries"][str(seq)] = kept
    state["size"] = seq + 1
    state["head"] = kept["entry_hash"]
    oracle = entry.get("oracle")
    if data["kind"] == "epoch_change" and isinstance(oracle, dict) and \
            isinstance(oracle.get("name"), str) and type(entry.get("epoch")) is int:
        state["epochs"][oracle["name"]] = entry["epoch"]
    if data["kind"] == "reversion" and type(entry.get("reverts")) is int:
        state["reverted"].setdefault(str(entry["reverts"]), seq)


def _on_key(state: State, event: RecordedEvent) -> None:
    data = event.data
    ref = data["key_ref"]
    if ref in state["keys"]:
        raise _Anomaly(f"key {ref} is already registered")
    state["keys"][ref] = {"role": data["role"], "vkey": data["vkey"],
                          "position": event.position, "revoked_from": None, "reason": None}


def _on_revoke(state: State, event: RecordedEvent) -> None:
    data = event.data
    key = state["keys"].get(data["key_ref"])
    if key is None:
        raise _Anomaly(f"key {data['key_ref']} is not registered")
    if key["revoked_from"] is None or data["from_seq"] < key["revoked_from"]:
        key["revoked_from"] = data["from_seq"]
        key["reason"] = data["reason"]


def _on_checkpoint(state: State, event: RecordedEvent) -> None:
    data = event.data
    state["checkpoints"].append({k: data[k] for k in ("size", "root", "origin", "key_ref", "note")}
                                | {"position": event.position})


_HANDLERS: Final = {
    ENTRY_RECORDED.name: _on_entry,
    KEY_REGISTERED.name: _on_key,
    KEY_REVOKED.name: _on_revoke,
    CHECKPOINT_SIGNED.name: _on_checkpoint,
}


def apply(state: State, event: RecordedEvent) -> State:
    """Fold one event into the register state (pure; see the module docstring)."""
    handler = _HANDLERS.get(event.type)
    if handler is None:
        return state
    try:
        handler(state, event)
    except _Anomaly as exc:
        state["anomalies"].append({"position": event.position, "type": event.type,
                                   "reason": str(exc)})
    return state


def _apply_own(state: State, event: RecordedEvent, digest: str) -> State:
    """:func:`apply` for a ``receipts.entry_recorded`` event the register itself just
    appended, whose entry it hashed while checking the receipt (``digest`` is
    :func:`entry_hash` of ``event.data["entry"]``): the same fold, without hashing again."""
    try:
        _on_entry(state, event, digest)
    except _Anomaly as exc:
        state["anomalies"].append({"position": event.position, "type": event.type,
                                   "reason": str(exc)})
    return state


def summary(state: State) -> str:
    """One line: entries, keys, latest checkpoint, anomalies."""
    cp = latest_checkpoint(state)
    where = f"checkpoint at size {cp['size']}" if cp else "no checkpoint"
    return (f"{state['size']} entr{'y' if state['size'] == 1 else 'ies'}, "
            f"{len(state['keys'])} key(s), {where}, {len(state['anomalies'])} anomalies")


def entries_in_window(state: State, i: int, j: int) -> list[dict[str, Any]]:
    """The entry summaries with ``i < seq <= j``, in seq order.

    ``i = -1`` starts at seq 0; ``j`` beyond the last entry stops at the last one.
    Raises :class:`ReceiptInputError` if ``i``/``j`` are not integers with ``-1 <= i <= j``.
    """
    for name, value in (("i", i), ("j", j)):
        if type(value) is not int:
            raise ReceiptInputError(f"{name}: must be an integer, got {type(value).__name__}")
    if not -1 <= i <= j:
        raise ReceiptInputError(f"window: need -1 <= i <= j, got ({i}, {j}]")
    top = min(j, state["size"] - 1)
    return [state["entries"][str(seq)] for seq in range(i + 1, top + 1)]


def latest_checkpoint(state: State) -> dict[str, Any] | None:
    """The most recently recorded checkpoint, or None."""
    return state["checkpoints"][-1] if state["checkpoints"] else None


def key_is_valid(state: State, key_ref: str, role: str, seq: int) -> bool:
    """True iff ``key_ref`` is registered with ``role`` and not revoked at ``seq``."""
    key = state["keys"].get(key_ref)
    if key is None or key["role"] != role:
        return False
    return key["revoked_from"] is None or seq < key["revoked_from"]


REGISTER_PROJECTION: Final = Projection(
    name=PROJECTION_NAME, version=1,
    event_types=frozenset(_HANDLERS), initial=initial_state(), apply=apply, summary=summary,
    description="the receipts register: entries by seq, keys, checkpoints",
)
