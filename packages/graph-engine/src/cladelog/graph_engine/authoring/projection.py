"""The method library as a projection of the master loop's records.

``apply_record(state, record) -> state`` is a pure fold over the records that
:class:`~.master_loop.MasterLoop` (``master_loop.solved``, ``master_loop.drifted``),
:class:`~.mount.MountController` (``mount.*``) and :class:`~.cache.RecordingCache`
(``authoring.cache_*``) emit: folding a run's records gives its cache, recall index, mount
regimes, hit counters and stats. Records carry absolute states where they can, so the same
change seen through two sinks folds to the same state. Unknown record types are skipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from ._util import canon
from .cache import CACHE_DELETED, CACHE_SET
from .errors import AuthoringError
from .master_loop import _STAT_OF_ARM, DRIFTED, SOLVED, MasterLoopStats
from .mount import REGIMES, MountController, MountState, MountThresholds
from .recall import RecallIndex

__all__ = ["LibraryState", "apply_record", "fold_records"]

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

    def build_mount(self, thresholds: MountThresholds | None = None) -> MountController:
        """A mount controller holding the projected states."""
        mount = MountController(thresholds)
        for mid, state in self.mounts.items():
            mount.restore(mid, state)
        return mount


class _Builder:
    def __init__(self, state: LibraryState) -> None:
        self.cache = dict(state.cache)
        self.index = list(state.index)
        self.mounts = dict(state.mounts)
        self.hits = dict(state.hits)
        self.stats = attrs.asdict(state.stats)

    def freeze(self) -> LibraryState:
        return LibraryState(self.cache, tuple(self.index), self.mounts, self.hits,
                            MasterLoopStats(**self.stats))

    def mount(self, mid: Any, data: Any, where: str) -> None:
        if not isinstance(data, Mapping):
            raise AuthoringError(f"{where}: must be an object")
        regime = data.get("regime")
        deopts = data.get("deoptCount", 0)
        widens = data.get("widenCount", 0)
        if regime not in REGIMES or not isinstance(deopts, int) or not isinstance(widens, int):
            raise AuthoringError(f"{where}: needs a regime and integer counters")
        self.mounts[str(mid)] = MountState(regime, deopts, widens)

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
        if isinstance(cost, bool) or not isinstance(cost, int | float):
            raise AuthoringError(f"{where}.cost: must be a number")
        self.stats[_STAT_OF_ARM[arm]] += 1
        self.stats["calls"] += 1
        self.stats["cost"] += cost
        hit, total = self.hits.get(mid, (0, 0))
        self.hits[mid] = (hit + (1 if data.get("hit") else 0), total + 1)
        if data.get("cached"):
            self.cache[key] = data.get("result")
        if data.get("indexed"):
            self.index.append((data.get("signature") or {}, data.get("result")))
        if "mount" in data:
            self.mount(mid, data["mount"], f"{where}.mount")

    def drifted(self, data: Mapping[str, Any], where: str) -> None:
        key = self.key(data, where)
        self.cache.pop(key, None)
        sig = data.get("signature")
        if sig is not None:
            text = canon(sig, f"{where}.signature")
            self.index = [e for e in self.index if canon(e[0]) != text]
        if "mount" in data:
            self.mount(data.get("id"), data["mount"], f"{where}.mount")


def apply_record(state: LibraryState, record: tuple[str, Mapping[str, Any]]) -> LibraryState:
    """Fold one record into ``state`` (pure: ``state`` is not modified)."""
    builder = _Builder(state)
    builder.apply(0, record)
    return builder.freeze()


def fold_records(records: Iterable[tuple[str, Mapping[str, Any]]],
                 state: LibraryState | None = None) -> LibraryState:
    """Fold every record, in order, from ``state`` (default: empty)."""
    builder = _Builder(state or LibraryState())
    for pos, record in enumerate(records):
        builder.apply(pos, record)
    return builder.freeze()
