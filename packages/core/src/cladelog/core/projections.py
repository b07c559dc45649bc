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

import gc
import hashlib
import json
import operator
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs

from ._gc import gc_paused
from .canonical import canonical_bytes
from .errors import ChainError, CladelogError, InputError, ProjectionError
from .events import GENESIS_HASH, RecordedEvent
from .registry import EventTypeRegistry
from .store.base import Checkpoint, EventStore, Head, check_checkpoints

__all__ = ["HeldStates", "Projection", "ProjectionResult", "ReplayResult", "replay",
           "state_digest"]


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


@attrs.define
class _Held:
    """One projection's state as a process holds it after a replay: already verified."""

    version: int
    head: Head
    state: Any
    digest: str | None  # None: events were applied since the digest was last taken
    saved: int  # the position of the checkpoint stored for it (-1: none)


class HeldStates:
    """The projection states one deployment holds in memory between replays.

    A state loaded from a checkpoint is verified (its digest recomputed) once; the next
    replay resumes from the held state, checking only that the log still has the hash
    it was folded up to (one indexed lookup), and applies just the new events. A state
    whose events did not change keeps its digest, so a replay with nothing new encodes
    nothing. Held states are the deployment's working copies: a later replay updates
    them in place. A replay that fails forgets the states it was folding (they may be
    half-updated); the next one starts again from the stored checkpoints.
    """

    def __init__(self) -> None:
        self._held: dict[str, _Held] = {}

    def get(self, proj: Projection, store: EventStore, head: Head, stop: int) -> _Held | None:
        """The state held for ``proj`` if it can resume a replay to ``stop`` (the log
        still has, at its position, the hash it was folded to; ``head`` is the log's)."""
        held = self._held.get(proj.name)
        if held is None or held.version != proj.version or held.head.position > stop:
            return None
        pos = held.head.position
        if pos > 0 and held.head != head and store.hash_at(pos) != held.head.hash:
            del self._held[proj.name]  # the log changed under it
            return None
        return held

    def put(self, name: str, held: _Held) -> None:
        old = self._held.get(name)
        if old is None or old.version != held.version or \
                old.head.position <= held.head.position:
            self._held[name] = held

    def forget(self, names: Iterable[str]) -> None:
        for name in names:
            self._held.pop(name, None)

    def unsaved(self) -> list[tuple[str, _Held]]:
        """The held states ahead of their stored checkpoint."""
        return [(n, h) for n, h in self._held.items() if h.head.position > h.saved]

    def save(self, store: EventStore, name: str, held: _Held) -> None:
        """Store ``held`` as the checkpoint of projection ``name`` (digest taken if needed)."""
        if held.digest is None:
            held.digest = state_digest(held.state)
        store.save_checkpoint(Checkpoint(name, held.version, held.head.position,
                                         held.head.hash, held.state, held.digest))
        held.saved = held.head.position

    def flush(self, store: EventStore) -> None:
        """Save every held state that is ahead of its stored checkpoint."""
        for name, held in self.unsaved():
            self.save(store, name, held)


_new_tuple = tuple.__new__
_TYPE = operator.itemgetter(3)  # a RecordedEvent's type
_SCHEMA = operator.itemgetter(4)  # ... and its schema version


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
) -> tuple[Head, Any, bool, str | None, int]:
    """Where ``proj`` resumes from its stored checkpoint: (head, state, rebuilt, digest,
    position of the stored checkpoint or -1)."""
    cp = None if rebuild else store.load_checkpoint(proj.name)
    stored = -1 if cp is None or cp.version != proj.version else cp.position
    if (
        cp is None
        or cp.version != proj.version
        or (to is not None and cp.position > to)
        or (cp.position > 0 and store.hash_at(cp.position) != cp.head_hash)
        # checkpoints live outside the chain: one whose state no longer matches the digest
        # it was saved with (edited by hand, say) is not trusted, but rebuilt
        or state_digest(cp.state) != cp.digest
    ):
        return Head(0, GENESIS_HASH), proj.fresh_state(), True, None, stored
    return Head(cp.position, cp.head_hash), cp.state, False, cp.digest, stored


def _start(
    store: EventStore, proj: Projection, rebuild: bool, to: int | None, head: Head,
    stop: int, held: HeldStates | None,
) -> tuple[Head, Any, bool, str | None, int]:
    """Where ``proj`` resumes: a state this process holds, else its checkpoint, else 0.

    (head, state, rebuilt, digest of the state or None, position of its stored checkpoint)
    """
    kept = None if rebuild or held is None else held.get(proj, store, head, stop)
    if kept is not None:
        return kept.head, kept.state, False, kept.digest, kept.saved
    return _start_for(store, proj, rebuild, to)


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
    held: HeldStates | None = None,
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

    ``held`` (a deployment's :class:`HeldStates`) lets the replay resume from states
    this process already verified instead of loading and re-digesting checkpoints; the
    states it ends with are held there for the next call.
    """
    end, read, starts, states, applied, skipped = _fold(store, registry, projections, to,
                                                        rebuild, progress, held,
                                                        accept_truncation)
    results = []
    for p in projections:
        state = states[p.name]
        _, _, rebuilt, digest, saved = starts[p.name]
        if digest is None or applied[p.name]:  # else the state is the one digested
            digest = state_digest(state)
        kept = _Held(p.version, end, state, digest, saved)
        if save and (rebuilt or saved != end.position):  # else it is stored already
            store.save_checkpoint(Checkpoint(p.name, p.version, end.position, end.hash,
                                             state, digest))
            kept.saved = end.position
        if held is not None:
            held.put(p.name, kept)
        results.append(ProjectionResult(
            p.name, p.version, end.position, digest, applied[p.name], rebuilt,
            p.summary(state) if p.summary else "", state,
        ))
    if progress is not None:
        progress(read, _total_of(starts, end))
    return ReplayResult(end, read, tuple(results), dict(skipped))


def advance(
    store: EventStore,
    registry: EventTypeRegistry,
    projections: Sequence[Projection],
    held: HeldStates,
) -> dict[str, Any]:
    """Bring ``projections`` up to the head and return their states by name, held in
    ``held``: no digest is taken and no checkpoint saved (see :meth:`HeldStates.flush`),
    so the call costs what the new events cost."""
    end, _, starts, states, applied, _ = _fold(store, registry, projections, None, False,
                                               None, held, False)
    for p in projections:
        _, _, _, digest, saved = starts[p.name]
        if applied[p.name]:
            digest = None
        held.put(p.name, _Held(p.version, end, states[p.name], digest, saved))
    return states


def _total_of(starts: Mapping[str, tuple[Head, Any, bool, str | None, int]], end: Head) -> int:
    """How many positions the replay covered: from the earliest start to ``end``."""
    return max(end.position - min((s[0].position for s in starts.values()),
                                  default=end.position), 0)


def _fold(
    store: EventStore,
    registry: EventTypeRegistry,
    projections: Sequence[Projection],
    to: int | None,
    rebuild: bool,
    progress: Callable[[int, int], None] | None,
    held: HeldStates | None,
    accept_truncation: bool,
) -> tuple[Head, int, dict[str, tuple[Head, Any, bool, str | None, int]], dict[str, Any],
           Counter[str], Counter[str]]:
    """Fold the events after each projection's start up to the head (or ``to``)."""
    collect = gc.isenabled()
    try:
        with gc_paused():  # see _fold_from
            return _fold_from(store, registry, projections, to, rebuild, progress, held,
                              accept_truncation, collect)
    except BaseException:
        if held is not None:  # the states may be half-folded: start again from checkpoints
            held.forget(p.name for p in projections)
        raise


def _fold_from(
    store: EventStore,
    registry: EventTypeRegistry,
    projections: Sequence[Projection],
    to: int | None,
    rebuild: bool,
    progress: Callable[[int, int], None] | None,
    held: HeldStates | None,
    accept_truncation: bool,
    collect: bool = False,
) -> tuple[Head, int, dict[str, tuple[Head, Any, bool, str | None, int]], dict[str, Any],
           Counter[str], Counter[str]]:
    head = store.head()
    _check_truncation(store, head, accept_truncation)
    stop = head.position if to is None else min(to, head.position)
    starts = {p.name: _start(store, p, rebuild, to, head, stop, held) for p in projections}
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
    singles: dict[str, tuple[int, int, Callable[[Any, RecordedEvent], Any]]] = {}
    for etype in registry:
        version = registry.get(etype).schema_version
        plan: list[tuple[int, int, Callable[[Any, RecordedEvent], Any]]] = []
        typed: list[tuple[int, int, Callable[[Any, RecordedEvent], Any]]] = []
        for k, p in enumerate(projections):
            if p.event_types is None or etype in p.event_types:
                (typed if p.payloads else plan).append((k, starts[p.name][0].position, p.apply))
        plans[etype] = [version, plan, typed, None, False]
        if len(plan) + len(typed) == 1:  # one projection takes the type: (k, start, apply)
            singles[etype] = (plan or typed)[0]
    skipped = Counter[str]()
    total = max(stop - begin.position, 0)
    pages: Iterable[list[RecordedEvent]] = ()
    if total:
        # a type only projections taking payloads read is decoded by the read itself
        # (events of an older schema version arrive as JSON and are upcast here first)
        decoders = {}
        for etype, spec in plans.items():
            if spec[2] and not spec[1]:
                spec[3], spec[4] = registry.loader(etype), True
                decoders[etype] = (spec[0], spec[3])
        pages = store.read_verified_pages(begin, stop, decoders=decoders)
    last_type: str | None = None
    entry: list[Any] | None = None
    last: RecordedEvent | None = None
    first = begin.position
    # the hot loop: per event only the dispatch (positions are checked by the read,
    # so how many were read and the last hash come from the last event afterwards)
    version, plan, typed, decoded = 0, [], [], False
    load: Any = None  # the current type's payload loader, once a typed projection needs it
    k = -1  # the projection being applied (-1: none), for the error message
    # _fold pauses the cyclic garbage collector; it runs here on the young generation after
    # every 64th page instead, between pages. A page's events, data and payload instances
    # form no cycles and reference counting frees them with the page, but the collections
    # the allocations trigger (one per 700) walk the live page and move it on to the older
    # generations, whose collections walk it again: about 1.4 us of CPU per event replayed
    # into payload instances, 0.4 us as JSON objects (50,000 events, measured). A young
    # collection after each page cost as much (~90 us each); after every 64th, ~0.02 us
    # per event, and it still frees, a few thousand events later, any cycle a projection
    # left behind. A collector the caller turned off stays off.
    young = gc.collect if collect else None
    tick = 0  # pages since the last young collection
    try:
        for page in pages:
            # a page of one type at its current schema version that one projection takes,
            # every event past that projection's start (and, for one taking payloads,
            # decoded by the read): that projection folds the page in one loop
            single = singles.get(page[0][3])
            one_plan = plans.get(page[0][3])  # [version, plan, typed, load, decoded]
            if single is not None and one_plan is not None and page[0][0] > single[1] \
                    and len({*map(_TYPE, page)}) == 1 \
                    and {*map(_SCHEMA, page)} == {one_plan[0]} \
                    and (one_plan[4] or not one_plan[2]):
                k = -1
                if progress is not None:  # each multiple of 5,000 the page holds
                    for at in range(-(-page[0][0] // 5000) * 5000, page[-1][0] + 1, 5000):
                        progress(at - first, total)
                k, _, apply = single
                state = state_list[k]
                for last in page:
                    state = apply(state, last)
                state_list[k] = state
                counts[k] += len(page)
            else:
                for event in page:
                    last = event
                    etype = event[3]  # indexing a named tuple is cheaper than its attribute
                    if etype != last_type:  # runs of one type are common: look up on a change
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
                    fresh = decoded  # whether the read already made data a payload instance
                    k = -1
                    if event[4] != version:
                        event = _upcast(registry, event)
                        fresh = False
                    pos = event[0]
                    if plan:
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
                del event
            del page  # its events go now (reference counting)
            tick += 1
            if tick == 64 and young is not None:  # 64 pages: a few thousand events
                young(0)
                tick = 0
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
    if read:
        end = Head(stop, last_hash)
    elif stop == head.position:
        end = head
    elif stop == begin.position:
        end = begin
    else:
        end = Head(stop, store.hash_at(stop) or GENESIS_HASH)
    return end, read, starts, states, applied, skipped
