"""The event log as an RFC 9162 Merkle tree, kept by the stores (schema version 4).

Leaf ``i`` of the tree is the event at position ``i + 1``; its leaf bytes are the
event's 32-byte chain hash, so the tree commits to the whole chain:
``leaf_hash = SHA-256(0x00 || chain hash)``. A store keeps the tree as its complete
subtrees (see :mod:`cladelog.core.transparency.merkle`): the leaves are not stored
again (they are the ``hash`` column of ``events``), every complete subtree above them
is a row ``tree_nodes(level, idx, hash)``, written in the append's own transaction
(amortised one row per event). A root, an inclusion proof or a consistency proof at any
size then reads O(log n) rows and never rebuilds anything.

This module holds what both SQL stores share: which nodes an append creates (from the
peaks of the tree before it, cached between appends and re-read when another writer
moved the head), the node reads behind a proof, and the rebuild used by ``cladelog
init`` when it upgrades an older store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from ..errors import InputError, StoreError
from ..transparency.merkle import (
    EMPTY_ROOT,
    Node,
    extend_tree,
    leaf_hash,
    peak_nodes,
    root_from_peaks,
    stored_consistency_proof,
    stored_inclusion_proof,
    stored_root,
)
from .base import Head

__all__ = [
    "NodeRow",
    "TreeState",
    "TreeWalk",
    "chain_leaf",
    "check_size",
    "consistency",
    "damaged",
    "extension",
    "inclusion",
    "missing_nodes",
    "rebuild_rows",
    "root",
]

NodeRow = tuple[int, int, bytes]
"""``(level, idx, hash)``: one stored complete subtree above the leaves (level >= 1)."""


def chain_leaf(chain_hash: str) -> bytes:
    """The RFC 9162 leaf hash of an event: ``SHA-256(0x00 || its 32-byte chain hash)``."""
    return leaf_hash(bytes.fromhex(chain_hash))


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
    chain_hashes: Iterable[str],
    cached: TreeState | None,
    fetch: Callable[[Sequence[Node]], dict[Node, bytes]],
) -> tuple[list[NodeRow], TreeState]:
    """The node rows an append of events with ``chain_hashes`` after ``head`` creates, and
    the tree state after it. The peaks of the tree at ``head`` come from ``cached`` when it
    is for this very head, else from ``fetch`` (the store's node read, inside the append's
    transaction)."""
    size = head.position
    if cached is not None and cached.head == head:
        peaks = cached.peaks
    else:
        wanted = peak_nodes(size)
        got = fetch(wanted)
        peaks = [got[n] for n in wanted]
    hashes = list(chain_hashes)
    nodes, new_peaks = extend_tree(size, peaks, (chain_leaf(h) for h in hashes))
    rows = [(level, idx, h) for level, idx, h in nodes if level > 0]
    new_head = Head(size + len(hashes), hashes[-1]) if hashes else head
    return rows, TreeState(new_head, new_peaks)


def rebuild_rows(chain_hashes: Iterable[str]) -> Iterator[list[NodeRow]]:
    """Every node row of the tree over the given chain hashes (positions 1, 2, ...), in
    chunks: what an upgrade to schema 4 inserts for the events a store already holds."""
    size, peaks = 0, list[bytes]()
    chunk: list[str] = []

    def flush() -> list[NodeRow]:
        nonlocal size, peaks
        nodes, peaks = extend_tree(size, peaks, (chain_leaf(h) for h in chunk))
        size += len(chunk)
        chunk.clear()
        return [(level, idx, h) for level, idx, h in nodes if level > 0]

    for h in chain_hashes:
        chunk.append(h)
        if len(chunk) == 4096:
            yield flush()
    if chunk:
        yield flush()


class TreeWalk:
    """The tree recomputed from the rows of a chain walk as they pass (``verify``), each
    new node compared with the stored one (read by level ranges, a few rows a leaf)."""

    def __init__(self, sizes: Iterable[int] = (),
                 stored: Callable[[int, int, int], list[bytes]] | None = None,
                 start: tuple[int, list[bytes]] = (0, [])) -> None:
        self.size = start[0]
        self.peaks: list[bytes] = list(start[1])
        self._wanted = set(sizes)
        self._stored = stored
        self.roots: dict[int, bytes] = {0: EMPTY_ROOT} if 0 in self._wanted else {}
        #: ``(position, reason)``: the first stored node that is not the recomputed one
        self.failure: tuple[int, str] | None = None

    def rows(self, rows: Iterable[Any]) -> Iterator[Any]:
        """Pass the rows through (column 8 is the chain hash), extending the tree."""
        wanted = self._wanted
        pending: list[bytes] = []
        for row in rows:
            yield row
            pending.append(chain_leaf(row[8]))
            if len(pending) == 4096 or self.size + len(pending) in wanted:
                self._extend(pending)
        self._extend(pending)

    def _extend(self, pending: list[bytes]) -> None:
        if not pending:
            return
        nodes, self.peaks = extend_tree(self.size, self.peaks, pending)
        self.size += len(pending)
        pending.clear()
        if self.size in self._wanted:
            self.roots[self.size] = self.root()
        if self._stored is not None and self.failure is None:
            self._compare(nodes)

    def _compare(self, nodes: list[tuple[int, int, bytes]]) -> None:
        by_level: dict[int, list[tuple[int, bytes]]] = {}
        for level, idx, h in nodes:
            if level > 0:
                by_level.setdefault(level, []).append((idx, h))
        assert self._stored is not None
        for level, made in sorted(by_level.items()):
            first = made[0][0]
            try:
                stored = self._stored(level, first, made[-1][0] + 1)
            except StoreError as exc:
                self.failure = ((first + 1) << level, str(exc).removeprefix("store: "))
                return
            for (idx, h), have in zip(made, stored + [b""] * (len(made) - len(stored))):
                if h != have:
                    what = "is missing" if not have else f"is {have.hex()}"
                    self.failure = ((idx + 1) << level, (
                        f"the Merkle tree node (level {level}, index {idx}) over events "
                        f"{(idx << level) + 1}..{(idx + 1) << level} {what}, but their chain "
                        f"hashes give {h.hex()}: the tree table does not match the log"))
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


def missing_nodes(wanted: Sequence[Node], got: dict[Node, bytes]) -> None:
    """Raise when the store lacks a node it should hold (a damaged or foreign table)."""
    lost = [n for n in wanted if n not in got]
    if lost:
        level, idx = lost[0]
        raise StoreError(
            f"store: the Merkle tree has no node (level {level}, index {idx}) although the "
            "log covers it; the tree table is damaged ('cladelog verify' checks it)"
        )


def damaged(size: int, exc: BaseException) -> StoreError:
    """The error of an append whose tree nodes the table already holds: nodes over leaves
    beyond the log's end, so events were removed under the tree (or the table is foreign)."""
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return StoreError(
        f"store: cannot extend the Merkle tree after position {size} ({reason}): the tree "
        "table holds nodes over events the log does not hold, so events were removed; "
        "nothing was appended ('cladelog verify --checkpoint' tells a cut from a rewrite)"
    )


def root(size: int, fetch: Callable[[Sequence[Node]], dict[Node, bytes]]) -> bytes:
    """The root at ``size`` (the empty tree's root for 0)."""
    return EMPTY_ROOT if size == 0 else stored_root(size, fetch)


def inclusion(index: int, size: int,
              fetch: Callable[[Sequence[Node]], dict[Node, bytes]]) -> list[bytes]:
    """The audit path of leaf ``index`` (position ``index + 1``) in the tree at ``size``."""
    return stored_inclusion_proof(index, size, fetch)


def consistency(old: int, new: int,
                fetch: Callable[[Sequence[Node]], dict[Node, bytes]]) -> list[bytes]:
    """The consistency proof from the tree at ``old`` to the tree at ``new``."""
    return stored_consistency_proof(old, new, fetch)
