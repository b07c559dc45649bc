"""The method library as a projection of the master loop's records.

``apply_record(state, record) -> state`` is a pure fold over the records that
:class:`~.master_loop.MasterLoop` (``master_loop.solved``, ``master_loop.drifted``),
:class:`~.mount.MountController` (``mount.*``) and :class:`~.cache.RecordingCache`
(``authoring.cache_*``) emit: folding a run's records gives its cache, recall index, mount
regimes, hit counters and stats. Records carry absolute states where they can, so the same
change seen through two sinks folds to the same state. Unknown record types are skipped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from ._util import canon
from .cache import CACHE_DELETED, CACHE_SET, MemoryCache
from .errors import AuthoringError
from .master_loop import (
    _STAT_OF_ARM,
    DRIFTED,
    SOLVED,
    ForgeContext,
    MasterLoop,
    MasterLoopStats,
)
from .mount import REGIMES, MountController, MountState, MountThresholds
from .recall import RecallIndex

__all__ = [
    "LibraryState",
    "apply_record",
    "apply_record_in_place",
    "empty_library",
    "fold_records",
    "library_of",
]

Sink = Callable[[str, dict[str, Any]], None]

_MOUNT_RECORDS = ("mount.decided", "mount.deopted", "mount.widened")


@attrs.frozen
class LibraryState:
    """The projected library: cache, recall index entries, mount states, hits and stats."""

    cache: Mapping[str, Any] = attrs.field(factory=dict)
    index: tuple[tuple[Mapping[str, Any], Any], ...] = ()
    mounts: Mapping[str, MountState] = attrs.field(factory=dict)
    hits: Mapping[str, tuple[int, int]] = attrs.field(factory=dict)
    stats: MasterLoopStats = attrs.field(factory=MasterLoopStats)

    def build_index(self) -> RecallIndex:
        """A recall index holding the projected entries."""
        index = RecallIndex()
        for sig, method in self.index:
            index.add(sig, method)
        return index

    def build_mount(self, thresholds: MountThresholds | None = None,
                    sink: Sink | None = None) -> MountController:
        """A mount controller holding the projected states (``sink`` gets later changes)."""
        mount = MountController(thresholds, sink)
        for mid, state in self.mounts.items():
            mount.restore(mid, state)
        return mount

    def build_loop(
        self,
        signature: Callable[[Any], Mapping[str, Any]],
        forge: Callable[[Any, ForgeContext], Any],
        re_forge: Callable[..., Any] | None = None,
        *,
        recall_k: int = 3,
        signals: Callable[[Any, str], Mapping[str, Any]] | None = None,
        thresholds: MountThresholds | None = None,
        sink: Sink | None = None,
        mount_sink: Sink | None = None,
    ) -> MasterLoop:
        """A master loop that continues this library: its cache, recall index, mount
        states, hit counters and stats. ``sink`` receives the loop's records and
        ``mount_sink`` the mount controller's; nothing is emitted for the restore itself."""
        loop = MasterLoop(signature, forge, re_forge, cache=MemoryCache(self.cache),
                          index=self.build_index(), mount=self.build_mount(thresholds,
                                                                          mount_sink),
                          recall_k=recall_k, signals=signals, sink=sink)
        loop.restore_counters(self.stats, self.hits)
        return loop


def empty_library() -> dict[str, Any]:
    """The JSON form of an empty library (what :func:`apply_record_in_place` folds into)."""
    return {"cache": {}, "index": [], "mounts": {}, "hits": {},
            "stats": attrs.asdict(MasterLoopStats())}


class _Builder:
    """Folds records into the JSON form of a library, in place."""

    def __init__(self, lib: dict[str, Any]) -> None:
        self.cache: dict[str, Any] = lib["cache"]
        self.index: list[list[Any]] = lib["index"]
        self.mounts: dict[str, dict[str, Any]] = lib["mounts"]
        self.hits: dict[str, list[int]] = lib["hits"]
        self.stats: dict[str, Any] = lib["stats"]

    @classmethod
    def of_state(cls, state: LibraryState) -> _Builder:
        return cls({
            "cache": dict(state.cache),
            "index": [[sig, method] for sig, method in state.index],
            "mounts": {mid: {"regime": s.regime, "deoptCount": s.deopt_count,
                             "widenCount": s.widen_count} for mid, s in state.mounts.items()},
            "hits": {mid: [h, t] for mid, (h, t) in state.hits.items()},
            "stats": attrs.asdict(state.stats),
        })

    def freeze(self) -> LibraryState:
        return LibraryState(
            dict(self.cache), tuple((sig, method) for sig, method in self.index),
            {mid: MountState(m["regime"], m["deoptCount"], m["widenCount"])
             for mid, m in self.mounts.items()},
            {mid: (h, t) for mid, (h, t) in self.hits.items()},
            MasterLoopStats(**self.stats))

    def mount(self, mid: Any, data: Any, where: str) -> None:
        if not isinstance(data, Mapping):
            raise AuthoringError(f"{where}: must be an object")
        regime = data.get("regime")
        deopts = data.get("deoptCount", 0)
        widens = data.get("widenCount", 0)
        if regime not in REGIMES or not _count(deopts) or not _count(widens):
            raise AuthoringError(f"{where}: needs a regime and integer counters")
        self.mounts[str(mid)] = {"regime": regime, "deoptCount": deopts, "widenCount": widens}

    def apply(self, pos: int, record: Any) -> None:
        if not isinstance(record, tuple | list) or len(record) != 2:
            raise AuthoringError(f"records[{pos}]: must be a (type, data) pair")
        kind, data = record
        where = f"records[{pos}]"
        if not isinstance(data, Mapping):
            raise AuthoringError(f"{where}.data: must be an object")
        if kind == SOLVED:
            self.solved(data, where)
        elif kind == DRIFTED:
            self.drifted(data, where)
        elif kind in _MOUNT_RECORDS:
            self.mount(data.get("id"), data, where)
        elif kind == CACHE_SET:
            self.cache[self.key(data, where)] = data.get("value")
        elif kind == CACHE_DELETED:
            self.cache.pop(self.key(data, where), None)

    @staticmethod
    def key(data: Mapping[str, Any], where: str) -> str:
        key = data.get("key")
        if not isinstance(key, str):
            raise AuthoringError(f"{where}.key: must be a string")
        return key

    def solved(self, data: Mapping[str, Any], where: str) -> None:
        arm = data.get("arm")
        if arm not in _STAT_OF_ARM:
            raise AuthoringError(f"{where}.arm: unknown arm {arm!r}")
        key = self.key(data, where)
        mid = str(data.get("id"))
        cost = data.get("cost", 0)
        if isinstance(cost, bool) or not isinstance(cost, int | float) or not math.isfinite(cost):
            raise AuthoringError(f"{where}.cost: must be a finite number")
        sig = data.get("signature")
        if data.get("indexed") and not isinstance(sig, Mapping):
            raise AuthoringError(f"{where}.signature: an indexed solve needs its signature")
        if "mount" in data:
            self.mount(mid, data["mount"], f"{where}.mount")
        self.stats[_STAT_OF_ARM[arm]] += 1
        self.stats["calls"] += 1
        self.stats["cost"] += cost
        hit, total = self.hits.get(mid, (0, 0))
        self.hits[mid] = [hit + (1 if data.get("hit") else 0), total + 1]
        if data.get("cached"):
            self.cache[key] = data.get("result")
        if data.get("indexed"):
            self.index.append([sig, data.get("result")])

    def drifted(self, data: Mapping[str, Any], where: str) -> None:
        key = self.key(data, where)
        sig = data.get("signature")
        text = None if sig is None else canon(sig, f"{where}.signature")
        if "mount" in data:
            self.mount(data.get("id"), data["mount"], f"{where}.mount")
        self.cache.pop(key, None)
        if text is not None:
            self.index[:] = [e for e in self.index if canon(e[0]) != text]


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def apply_record_in_place(lib: dict[str, Any], record: tuple[str, Mapping[str, Any]],
                          where: int = 0) -> dict[str, Any]:
    """Fold one record into the JSON form of a library (see :func:`empty_library`), in
    place, and return it: the step of the cladelog projection over the log."""
    _Builder(lib).apply(where, record)
    return lib


def library_of(lib: Mapping[str, Any]) -> LibraryState:
    """The :class:`LibraryState` of a library's JSON form."""
    return _Builder(dict(lib)).freeze()


def apply_record(state: LibraryState, record: tuple[str, Mapping[str, Any]]) -> LibraryState:
    """Fold one record into ``state`` (pure: ``state`` is not modified)."""
    builder = _Builder.of_state(state)
    builder.apply(0, record)
    return builder.freeze()


def fold_records(records: Iterable[tuple[str, Mapping[str, Any]]],
                 state: LibraryState | None = None) -> LibraryState:
    """Fold every record, in order, from ``state`` (default: empty)."""
    if isinstance(records, str | bytes | Mapping) or not isinstance(records, Iterable):
        raise AuthoringError(f"records: must be a list of (type, data) pairs, got "
                             f"{type(records).__name__}")
    builder = _Builder.of_state(state or LibraryState())
    for pos, record in enumerate(records):
        builder.apply(pos, record)
    return builder.freeze()
