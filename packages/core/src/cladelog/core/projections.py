"""Projections and replay.

A projection is a pure fold over the log: ``apply(state, event) -> state``.
State is a JSON value (objects with string keys, arrays, strings, finite
numbers, booleans, null); ``apply`` may update it in place and return it, but
must depend only on the state and the event: no clock, no unseeded randomness,
no I/O. Each state has a digest, the hex SHA-256 of its canonical bytes, so
the same log gives the same digests on any store and machine, however the
replay was split into incremental steps.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs

from .canonical import canonical_bytes
from .errors import ChainError, CladelogError, InputError, ProjectionError
from .events import GENESIS_HASH, RecordedEvent
from .registry import EventTypeRegistry
from .store.base import Checkpoint, EventStore, Head, check_checkpoints

__all__ = ["Projection", "ProjectionResult", "ReplayResult", "replay", "state_digest"]


def _copy_json(value: Any) -> Any:
    return json.loads(canonical_bytes(value))


def state_digest(state: Any) -> str:
    """Hex SHA-256 of a state's canonical JSON bytes."""
    return hashlib.sha256(canonical_bytes(state)).hexdigest()


@attrs.frozen
class Projection:
    """A named, versioned, pure fold over events of the given types.

    ``event_types=None`` means every registered type. ``initial`` is copied for
    each fresh start. ``summary`` renders a one-line human summary of a state.
    Bump ``version`` whenever ``apply`` changes meaning: the next replay then
    rebuilds this projection from position 0. With ``payloads=True``, ``apply``
    receives each event with ``data`` as an instance of its type's payload class
    (after upcasting) rather than as a JSON object.
    """

    name: str
    version: int
    event_types: frozenset[str] | None
    initial: Any
    apply: Callable[[Any, RecordedEvent], Any]
    summary: Callable[[Any], str] | None = None
    description: str = ""
    payloads: bool = False

    def fresh_state(self) -> Any:
        return _copy_json(self.initial)


@attrs.frozen
class ProjectionResult:
    name: str
    version: int
    position: int
    digest: str
    applied: int
    rebuilt: bool
    summary: str
    state: Any = attrs.field(repr=False, eq=False)


@attrs.frozen
class ReplayResult:
    head: Head
    events_read: int
    projections: tuple[ProjectionResult, ...]
    skipped_unknown: Mapping[str, int]

    def to_json(self) -> dict[str, Any]:
        return {
            "head": {"position": self.head.position, "hash": self.head.hash},
            "events_read": self.events_read,
            "skipped_unknown": dict(sorted(self.skipped_unknown.items())),
            "projections": [
                {"name": p.name, "version": p.version, "position": p.position,
                 "digest": p.digest, "applied": p.applied, "rebuilt": p.rebuilt,
                 "summary": p.summary}
                for p in self.projections
            ],
        }


_new_tuple = tuple.__new__


def _upcast(registry: EventTypeRegistry, event: RecordedEvent) -> RecordedEvent:
    """``event`` with its data upcast to the current schema version (InputError naming the
    position, e.g. for a version newer than the plugin's)."""
    try:
        return event._replace(data=registry.upcast(event[3], event[4], event[5]))
    except InputError as exc:
        raise InputError(f"event at position {event[0]} ({event[3]}): {exc}") from None


def _with_payload(event: RecordedEvent, load: Callable[[Any], Any]) -> RecordedEvent:
    """``event`` with its data as a payload instance (InputError naming the position)."""
    try:
        obj = load(event[5])
    except InputError as exc:
        raise InputError(f"event at position {event[0]} ({event[3]}): {exc}") from None
    items = list(event)
    items[5] = obj
    return _new_tuple(RecordedEvent, items)  # type: ignore[no-any-return]


def _start_for(
    store: EventStore, proj: Projection, rebuild: bool, to: int | None
) -> tuple[Head, Any, bool]:
    cp = None if rebuild else store.load_checkpoint(proj.name)
    if (
        cp is None
        or cp.version != proj.version
        or (to is not None and cp.position > to)
        or (cp.position > 0 and store.hash_at(cp.position) != cp.head_hash)
        # checkpoints live outside the chain: one whose state no longer matches the digest
        # it was saved with (edited by hand, say) is not trusted, but rebuilt
        or state_digest(cp.state) != cp.digest
    ):
        return Head(0, GENESIS_HASH), proj.fresh_state(), True
    return Head(cp.position, cp.head_hash), cp.state, False


def _check_truncation(store: EventStore, head: Head, accept: bool) -> None:
    """Refuse (or, accepted, forget) checkpoints that prove the log was cut or rewritten."""
    marks = store.checkpoint_marks()  # one query, no state loaded
    found = check_checkpoints(head, marks)
    if found is None:
        return
    if not accept:
        raise ChainError(found[0], f"{found[1]}; replay refuses to rebuild the projections "
                                   "over it (restore the log from a copy, or accept the "
                                   "loss: 'cladelog replay --accept-truncation')")
    from .log import get_logger

    for c in marks:
        if check_checkpoints(head, [c]) is not None:
            get_logger("cladelog.replay").warning(
                "replay.truncation_accepted", projection=c.name, checkpoint=c.position,
                head=head.position)
            store.delete_checkpoint(c.name)


def replay(
    store: EventStore,
    registry: EventTypeRegistry,
    projections: Sequence[Projection],
    *,
    to: int | None = None,
    rebuild: bool = False,
    save: bool = True,
    progress: Callable[[int, int], None] | None = None,
    accept_truncation: bool = False,
) -> ReplayResult:
    """Fold the log through ``projections``, verifying the chain as it is read.

    Each projection resumes from its checkpoint (unless ``rebuild``, a new
    version, or a checkpoint past ``to``), and its new checkpoint is saved when
    ``save``. Events of types the registry does not know are skipped and
    counted, never dropped. Raises :class:`ChainError` at the first event that
    does not verify; nothing is saved then.

    A store whose checkpoints prove the log was longer (or different) when they were
    taken (:meth:`EventStore.truncation`) is refused with :class:`ChainError`: rebuilding
    over it would replace that evidence with states of the damaged log. With
    ``accept_truncation`` the replay goes ahead: every checkpoint that disagrees with the
    log is deleted (a projection of this replay rebuilds from position 0).
    """
    head = store.head()
    _check_truncation(store, head, accept_truncation)
    stop = head.position if to is None else min(to, head.position)
    starts = {p.name: _start_for(store, p, rebuild, to) for p in projections}
    states = {name: s[1] for name, s in starts.items()}
    applied = Counter[str]()
    begin = min((s[0] for s in starts.values()), key=lambda h: h.position,
                default=Head(stop, head.hash))
    # per event type: its current schema version, the (index, start, apply) of the
    # projections taking JSON data and of those taking payload instances, and the
    # type's payload loader (looked up on the first event that needs it)
    names = [p.name for p in projections]
    state_list = [states[n] for n in names]
    counts = [0] * len(projections)
    plans: dict[str, list[Any]] = {}
    for etype in registry:
        version = registry.get(etype).schema_version
        plan: list[tuple[int, int, Callable[[Any, RecordedEvent], Any]]] = []
        typed: list[tuple[int, int, Callable[[Any, RecordedEvent], Any]]] = []
        for k, p in enumerate(projections):
            if p.event_types is None or etype in p.event_types:
                (typed if p.payloads else plan).append((k, starts[p.name][0].position, p.apply))
        plans[etype] = [version, plan, typed, None, False]
    skipped = Counter[str]()
    total = max(stop - begin.position, 0)
    events: Iterable[RecordedEvent] = ()
    if total:
        # a type only projections taking payloads read is decoded by the read itself
        # (events of an older schema version arrive as JSON and are upcast here first)
        decoders = {}
        for etype, spec in plans.items():
            if spec[2] and not spec[1]:
                spec[3], spec[4] = registry.loader(etype), True
                decoders[etype] = (spec[0], spec[3])
        events = store.read_verified(begin, stop, decoders=decoders)
    last_type: str | None = None
    entry: list[Any] | None = None
    last: RecordedEvent | None = None
    first = begin.position
    # the hot loop: per event only the dispatch (positions are checked by the read,
    # so how many were read and the last hash come from the last event afterwards)
    version, plan, typed, decoded = 0, [], [], False
    load: Any = None  # the current type's payload loader, once a typed projection needs it
    k = -1  # the projection being applied (-1: none), for the error message
    try:
        for event in events:
            last = event
            etype = event[3]  # indexing a named tuple is cheaper than its attribute
            if etype != last_type:  # runs of one type are common: look up only on a change
                last_type = etype
                entry = plans.get(etype)
                if entry is not None:
                    if entry[2] and entry[3] is None:
                        entry[3] = registry.loader(etype)
                    version, plan, typed, load, decoded = entry
            if progress is not None and event[0] % 5000 == 0:
                progress(event[0] - first, total)
            if entry is None:
                skipped[etype] += 1
                continue
            fresh = decoded  # whether the read already turned data into a payload instance
            k = -1
            if event[4] != version:
                event = _upcast(registry, event)
                fresh = False
            pos = event[0]
            for k, start, apply in plan:
                if pos > start:
                    state_list[k] = apply(state_list[k], event)
                    counts[k] += 1
            if typed:
                with_payload = event if fresh else None
                for k, start, apply in typed:
                    if pos > start:
                        if with_payload is None:
                            with_payload = _with_payload(event, load)
                        state_list[k] = apply(state_list[k], with_payload)
                        counts[k] += 1
    except CladelogError:
        raise
    except Exception as exc:  # a plugin's fold or upcaster; the chain read was fine
        if last is None:
            raise
        raise ProjectionError(last.position, names[k] if k >= 0 else None,
                              f"{type(exc).__name__}: {exc}") from exc
    read = last.position - first if last is not None else 0
    last_hash = last.hash if last is not None else begin.hash
    for k, name in enumerate(names):
        states[name] = state_list[k]
        applied[name] = counts[k]
    if read != total:
        raise ChainError(begin.position + read + 1, "the log ended before the expected head")
    end = Head(stop, last_hash if read else (store.hash_at(stop) or GENESIS_HASH))
    results = []
    for p in projections:
        state = states[p.name]
        digest = state_digest(state)
        unchanged = not starts[p.name][2] and starts[p.name][0].position == end.position
        if save and not unchanged:  # a checkpoint already at this position is left as it is
            store.save_checkpoint(Checkpoint(p.name, p.version, end.position, end.hash,
                                             state, digest))
        results.append(ProjectionResult(
            p.name, p.version, end.position, digest, applied[p.name], starts[p.name][2],
            p.summary(state) if p.summary else "", state,
        ))
    if progress is not None:
        progress(read, total)
    return ReplayResult(end, read, tuple(results), dict(skipped))
