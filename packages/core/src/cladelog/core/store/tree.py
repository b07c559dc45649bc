"""The event log as an RFC 9162 Merkle tree, kept by the stores (since SQLite schema 4 and
PostgreSQL schema 4; stored every 6th level since SQLite 5 and PostgreSQL 7).

Leaf ``i`` of the tree is the event at position ``i + 1``; its leaf bytes are the
event's 32-byte chain hash, so the tree commits to the whole chain:
``leaf_hash = SHA-256(0x00 || chain hash)``. A store keeps the tree as complete
subtrees (see :mod:`cladelog.core.transparency.merkle`): the leaves are not stored again
(they are the ``hash`` column of ``events``), and the complete subtrees at every
:data:`STRIDE`-th level (6, 12, 18, ...) are rows ``tree_nodes(level, idx, hash)``,
written in the append's own transaction: one row per 64 events (1/64 + 1/4096 + ...).
A node at a level in between is computed from at most ``2**(STRIDE-1) = 32`` stored
nodes (or leaves) under it, read in the same query. A root, an inclusion proof or a
consistency proof at any size therefore reads O(log n) rows (at most 32 per proof hash,
about 12 on average) and never rebuilds anything; an append writes few rows.

The stride trades what an append writes against what a proof reads. At 4 (schema 4 to
6 of PostgreSQL, 4 of SQLite) the row inserts were about a sixth of what the tree costs
an append at batch 1,000; at 6 an append writes a quarter as many rows, and an
inclusion proof in a million-event log reads about 240 rows instead of 84, in 0.62–0.64
ms (benchmarks/README.md, the core section).

This module holds what both SQL stores share: which rows an append creates (from the
peaks of the tree before it, cached between appends and re-read when another writer
moved the head), how nodes are computed from the rows read, and the rebuild used by
``cladelog init`` when it upgrades an older store. A store provides one read,
``read_ranges([(level, lo, hi), ...])``: for each range the hashes of the nodes
``(level, lo)`` .. ``(level, hi - 1)`` it holds (level 0: the events' leaf hashes),
in order.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from ..errors import InputError, StoreError
from ..transparency.merkle import (
    EMPTY_ROOT,
    Node,
    ProofError,
    extend_tree,
    peak_nodes,
    root_from_peaks,
    stored_consistency_proof,
    stored_inclusion_proof,
    stored_root,
)
from .base import Head

__all__ = [
    "STRIDE",
    "NodeRow",
    "RangeReader",
    "TreeState",
    "TreeWalk",
    "chain_leaf",
    "check_size",
    "consistency",
    "damaged",
    "extension",
    "fetch",
    "inclusion",
    "node_range",
    "rebuild_rows",
    "root",
    "stored",
]

#: the stored levels are the multiples of STRIDE above the leaves; both stores' guard
#: triggers and PostgreSQL's append function are written from this one value
STRIDE = 6

NodeRow = tuple[int, int, bytes]
"""``(level, idx, hash)``: one stored complete subtree (level a multiple of STRIDE)."""
RangeReader = Callable[[Sequence[tuple[int, int, int]]], list[list[bytes]]]
"""``read_ranges``: for each ``(level, lo, hi)`` the stored hashes in order."""

_sha256 = hashlib.sha256


def chain_leaf(chain_hash: str) -> bytes:
    """The RFC 9162 leaf hash of an event: ``SHA-256(0x00 || its 32-byte chain hash)``."""
    return _sha256(b"\x00" + bytes.fromhex(chain_hash)).digest()


def stored(level: int) -> bool:
    """Whether the nodes of ``level`` are rows of ``tree_nodes``."""
    return level > 0 and level % STRIDE == 0


def _base(level: int, idx: int) -> tuple[int, int, int]:
    """The stored range a node is computed from: ``(base level, lo, hi)``."""
    b = level - level % STRIDE
    return b, idx << (level - b), (idx + 1) << (level - b)


def _fold_up(hashes: list[bytes], steps: int) -> list[bytes]:
    for _ in range(steps):
        hashes = [_sha256(b"\x01" + hashes[k] + hashes[k + 1]).digest()
                  for k in range(0, len(hashes) - 1, 2)]
    return hashes


def _missing(level: int, lo: int, hi: int) -> StoreError:
    what = "leaves" if level == 0 else f"nodes (level {level}, index {lo}..{hi - 1})"
    return StoreError(
        f"store: the Merkle tree lacks some of its {what} although the log covers them; "
        "the tree table is damaged ('cladelog verify' names the node)"
    )


def fetch(wanted: Sequence[Node], read_ranges: RangeReader) -> dict[Node, bytes]:
    """The hashes of the complete subtrees ``wanted`` (all within the log), each from the
    at most ``2**(STRIDE-1)`` stored rows under it; one call of ``read_ranges``."""
    ranges = [_base(level, idx) for level, idx in wanted]
    got = read_ranges(ranges)
    out: dict[Node, bytes] = {}
    for (level, idx), (b, lo, hi), hashes in zip(wanted, ranges, got, strict=True):
        if len(hashes) != hi - lo:
            raise _missing(b, lo, hi)
        out[(level, idx)] = _fold_up(hashes, level - b)[0]
    return out


def node_range(level: int, start: int, stop: int, read_ranges: RangeReader) -> list[bytes]:
    """The hashes of the complete nodes ``(level, start)`` .. ``(level, stop - 1)`` the
    stored rows give, in order (fewer at the log's end)."""
    b, lo, _ = _base(level, start)
    hi = stop << (level - b)
    hashes = read_ranges([(b, lo, hi)])[0]
    width = 1 << (level - b)
    hashes = hashes[: len(hashes) - len(hashes) % width]
    return _fold_up(hashes, level - b)


class TreeState:
    """The tree's peaks after the last append this process made, for the next one.

    Valid only while the log's head is still ``head``: an append by another writer moves
    it, and the next append then reads the peaks from the table (O(log n) rows).
    """

    __slots__ = ("head", "peaks")

    def __init__(self, head: Head, peaks: list[bytes]) -> None:
        self.head = head
        self.peaks = peaks


def extension(
    head: Head,
    chain_hashes: Iterable[str] | Iterable[bytes],
    cached: TreeState | None,
    read_ranges: RangeReader,
    *,
    raw: bool = False,
) -> tuple[list[NodeRow], TreeState]:
    """The rows an append of events with ``chain_hashes`` (hex, or with ``raw`` their 32
    bytes) after ``head`` creates, and the tree state after it. The peaks of the tree at
    ``head`` come from ``cached`` when it is for this very head, else from the store
    (inside the append's transaction)."""
    size = head.position
    if cached is not None and cached.head == head:
        peaks = cached.peaks
    else:
        wanted = peak_nodes(size)
        got = fetch(wanted, read_ranges)
        peaks = [got[n] for n in wanted]
    hashes: list[Any] = list(chain_hashes)
    rows, new_peaks = _grow(size, peaks, hashes, raw=raw)
    if not hashes:
        new_head = head
    else:
        last = hashes[-1]
        new_head = Head(size + len(hashes), last.hex() if raw else last)
    return rows, TreeState(new_head, new_peaks)


def _grow(size: int, peaks: list[bytes], chain_hashes: list[Any], *, raw: bool = False
          ) -> tuple[list[NodeRow], list[bytes]]:
    """:func:`~cladelog.core.transparency.merkle.extend_tree` over the events' leaf
    hashes (from their chain hashes: hex, or with ``raw`` bytes), keeping the stored
    levels only."""
    leaves = chain_hashes if raw else map(bytes.fromhex, chain_hashes)
    try:
        return extend_tree(size, peaks, leaves, every=STRIDE, leaves=False, leaf_data=True)
    except ProofError as exc:
        raise StoreError(f"store: {exc}") from None


def rebuild_rows(chain_hashes: Iterable[str]) -> Iterator[list[NodeRow]]:
    """Every row of the tree over the given chain hashes (positions 1, 2, ...), in chunks:
    what an upgrade inserts for the events a store already holds (SQLite schema 4 and 5,
    PostgreSQL 4 and 7: a new stride rebuilds the table)."""
    state: TreeState | None = TreeState(Head(0, ""), [])
    chunk: list[str] = []

    def flush() -> list[NodeRow]:
        nonlocal state
        assert state is not None
        rows, state = extension(state.head, chunk, state, _no_read)
        chunk.clear()
        return rows

    for h in chain_hashes:
        chunk.append(h)
        if len(chunk) == 4096:
            yield flush()
    if chunk:
        yield flush()


def _no_read(ranges: Sequence[tuple[int, int, int]]) -> list[list[bytes]]:
    raise AssertionError("the peaks are known")  # pragma: no cover


class TreeWalk:
    """The tree recomputed from the rows of a chain walk as they pass (``verify``), each
    new stored node compared with the table's (read by level ranges)."""

    def __init__(self, sizes: Iterable[int] = (), read_ranges: RangeReader | None = None,
                 start: tuple[int, list[bytes]] = (0, [])) -> None:
        self.size = start[0]
        self.peaks: list[bytes] = list(start[1])
        self._wanted = set(sizes)
        self._read = read_ranges
        self.roots: dict[int, bytes] = {0: EMPTY_ROOT} if 0 in self._wanted else {}
        #: ``(position, reason)``: the first stored node that is not the recomputed one
        self.failure: tuple[int, str] | None = None

    def rows(self, rows: Iterable[Any]) -> Iterator[Any]:
        """Pass the rows through (column 8 is the chain hash), extending the tree."""
        wanted = self._wanted
        pending: list[str] = []
        add = pending.append
        for row in rows:
            yield row
            add(row[8])
            if len(pending) == 4096 or self.size + len(pending) in wanted:
                self._extend(pending)
        self._extend(pending)

    def _extend(self, pending: list[str]) -> None:
        if not pending:
            return
        nodes, self.peaks = _grow(self.size, self.peaks, pending)
        self.size += len(pending)
        pending.clear()
        if self.size in self._wanted:
            self.roots[self.size] = self.root()
        if self._read is not None and self.failure is None:
            self._compare(nodes)

    def _compare(self, nodes: list[NodeRow]) -> None:
        by_level: dict[int, list[tuple[int, bytes]]] = {}
        for level, idx, h in nodes:
            by_level.setdefault(level, []).append((idx, h))
        levels = sorted(by_level)
        if not levels:
            return
        assert self._read is not None
        got = self._read([(lv, by_level[lv][0][0], by_level[lv][-1][0] + 1) for lv in levels])
        for level, have in zip(levels, got, strict=True):
            made = by_level[level]
            if len(have) != len(made):
                a, b = made[0][0], made[-1][0]
                self.failure = ((a + 1) << level, (
                    f"the Merkle tree nodes (level {level}, index {a}..{b}) over events "
                    f"{(a << level) + 1}..{(b + 1) << level}: the table holds {len(have)} of "
                    f"the {len(made)}, so it does not match the log"))
                return
            for (idx, h), old in zip(made, have, strict=True):
                if h != old:
                    self.failure = ((idx + 1) << level, (
                        f"the Merkle tree node (level {level}, index {idx}) over events "
                        f"{(idx << level) + 1}..{(idx + 1) << level} is {old.hex()}, but their "
                        f"chain hashes give {h.hex()}: the tree table does not match the log"))
                    return

    def root(self) -> bytes:
        """The root of the leaves walked so far."""
        return root_from_peaks(self.peaks)


def check_size(name: str, value: object, head: int, *, minimum: int = 0) -> int:
    """An argument naming a tree size or leaf index: an int in ``[minimum, head]``."""
    if type(value) is not int:
        raise InputError(f"{name}: must be an integer, got {type(value).__name__}")
    if value < minimum:
        raise InputError(f"{name}: must be >= {minimum}, got {value}")
    if value > head:
        raise InputError(f"{name}: {value} is beyond the log's {head} event(s)")
    return value


def damaged(size: int, exc: BaseException) -> StoreError:
    """The error of an append whose tree rows the table already holds: rows over leaves
    beyond the log's end, so events were removed under the tree (or the table is foreign)."""
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return StoreError(
        f"store: cannot extend the Merkle tree after position {size} ({reason}): the tree "
        "table holds nodes over events the log does not hold, so events were removed; "
        "nothing was appended ('cladelog verify --checkpoint' tells a cut from a rewrite)"
    )


def root(size: int, nodes: Callable[[Sequence[Node]], dict[Node, bytes]]) -> bytes:
    """The root at ``size`` (the empty tree's root for 0)."""
    return EMPTY_ROOT if size == 0 else stored_root(size, nodes)


def inclusion(index: int, size: int,
              nodes: Callable[[Sequence[Node]], dict[Node, bytes]]) -> list[bytes]:
    """The audit path of leaf ``index`` (position ``index + 1``) in the tree at ``size``."""
    return stored_inclusion_proof(index, size, nodes)


def consistency(old: int, new: int,
                nodes: Callable[[Sequence[Node]], dict[Node, bytes]]) -> list[bytes]:
    """The consistency proof from the tree at ``old`` to the tree at ``new``."""
    return stored_consistency_proof(old, new, nodes)
