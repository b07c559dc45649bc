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
from .errors import ChainError
from .events import GENESIS_HASH, RecordedEvent
from .registry import EventTypeRegistry
from .store.base import Checkpoint, EventStore, Head

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
    rebuilds this projection from position 0.
    """

    name: str
    version: int
    event_types: frozenset[str] | None
    initial: Any
    apply: Callable[[Any, RecordedEvent], Any]
    summary: Callable[[Any], str] | None = None
    description: str = ""

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


def _start_for(
    store: EventStore, proj: Projection, rebuild: bool, to: int | None
) -> tuple[Head, Any, bool]:
    cp = None if rebuild else store.load_checkpoint(proj.name)
    if (
        cp is None
        or cp.version != proj.version
        or (to is not None and cp.position > to)
        or (cp.position > 0 and store.hash_at(cp.position) != cp.head_hash)
    ):
        return Head(0, GENESIS_HASH), proj.fresh_state(), True
    return Head(cp.position, cp.head_hash), cp.state, False


def replay(
    store: EventStore,
    registry: EventTypeRegistry,
    projections: Sequence[Projection],
    *,
    to: int | None = None,
    rebuild: bool = False,
    save: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> ReplayResult:
    """Fold the log through ``projections``, verifying the chain as it is read.

    Each projection resumes from its checkpoint (unless ``rebuild``, a new
    version, or a checkpoint past ``to``), and its new checkpoint is saved when
    ``save``. Events of types the registry does not know are skipped and
    counted, never dropped. Raises :class:`ChainError` at the first event that
    does not verify; nothing is saved then.
    """
    head = store.head()
    stop = head.position if to is None else min(to, head.position)
    starts = {p.name: _start_for(store, p, rebuild, to) for p in projections}
    states = {name: s[1] for name, s in starts.items()}
    applied = Counter[str]()
    begin = min((s[0] for s in starts.values()), key=lambda h: h.position,
                default=Head(stop, head.hash))
    # per event type: its current schema version and (index, start, apply) of its projections
    names = [p.name for p in projections]
    state_list = [states[n] for n in names]
    counts = [0] * len(projections)
    plans: dict[str, tuple[int, list[tuple[int, int, Callable[[Any, RecordedEvent], Any]]]]] = {}
    for etype in registry:
        version = registry.get(etype).schema_version
        plan = [(k, starts[p.name][0].position, p.apply) for k, p in enumerate(projections)
                if p.event_types is None or etype in p.event_types]
        plans[etype] = (version, plan)
    skipped = Counter[str]()
    total = max(stop - begin.position, 0)
    events: Iterable[RecordedEvent] = store.read_verified(begin, stop) if total else ()
    last_type: str | None = None
    entry: tuple[int, list[Any]] | None = None
    last: RecordedEvent | None = None
    first = begin.position
    # the hot loop: per event only the dispatch (positions are checked by the read,
    # so how many were read and the last hash come from the last event afterwards)
    for event in events:
        last = event
        etype = event.type
        if etype != last_type:  # runs of one type are common: skip the lookup then
            entry = plans.get(etype)
            last_type = etype
        if entry is None:
            skipped[etype] += 1
        elif entry[1]:
            version, plan = entry
            if event.schema_version != version:
                event = event._replace(
                    data=registry.upcast(etype, event.schema_version, event.data))
            pos = event.position
            for k, start, apply in plan:
                if pos > start:
                    state_list[k] = apply(state_list[k], event)
                    counts[k] += 1
        if progress is not None and event.position % 5000 == 0:
            progress(event.position - first, total)
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
