"""RFC 9162 (RFC 6962) Merkle tree hashing, proof generation and proof verification.

For an auditor
--------------
Hashing is SHA-256 with domain separation, exactly as RFC 9162 section 2.1.1:

* the hash of an empty tree is ``SHA-256("")`` (:data:`EMPTY_ROOT`);
* a leaf hash is ``SHA-256(0x00 || leaf bytes)`` (:func:`leaf_hash`);
* an interior node is ``SHA-256(0x01 || left || right)`` (:func:`node_hash`);
* the tree over ``n > 1`` leaves splits at ``k``, the largest power of two
  strictly below ``n``: ``MTH(D[0:n]) = node(MTH(D[0:k]), MTH(D[k:n]))``.

The verification functions (:func:`verify_inclusion`, :func:`root_from_inclusion`,
:func:`verify_consistency`) are pure, use only :mod:`hashlib`, and follow the
algorithms of RFC 9162 sections 2.1.3.2 and 2.1.4.2. They raise
:class:`ProofError` (a :class:`ValueError`) with a one-line reason and never
return a boolean, so a forgotten check cannot pass silently. Nothing here touches a
store: a third party can copy this one module (it needs only :mod:`hashlib` and the
error base class) and verify cladelog's proofs with it.

Conventions beyond the RFC (the transparency-dev test-vector conventions):

* leaf indices are 0-based and must be below the tree size;
* every hash in an inclusion proof, every leaf hash and every root compared
  against a computed value must be exactly 32 bytes;
* a consistency proof from size 0 is always an error (nothing is proved);
* for equal sizes the proof must be empty and the two roots byte-equal (they
  are then compared as given, whatever their length);
* sizes and indices are Python ``int`` (not ``bool``), non-negative.

A tree is kept as its complete subtrees (:func:`extend_tree` creates them as leaves
are appended, amortised two per leaf); a root, an inclusion proof or a consistency
proof at any size then reads O(log n) of them (:func:`stored_root`,
:func:`stored_inclusion_proof`, :func:`stored_consistency_proof`, given a ``fetch``
of stored nodes) and computes at most O(log n) hashes. :class:`MerkleTree` keeps them
in memory; cladelog's stores keep them in a table, updated in each append's
transaction.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from ..errors import VerificationError

__all__ = [
    "EMPTY_ROOT",
    "HASH_SIZE",
    "MerkleTree",
    "Node",
    "NodeFetcher",
    "ProofError",
    "consistency_ranges",
    "extend_tree",
    "inclusion_ranges",
    "leaf_hash",
    "node_hash",
    "peak_nodes",
    "root_from_inclusion",
    "root_from_leaves",
    "root_from_peaks",
    "stored_consistency_proof",
    "stored_inclusion_proof",
    "stored_root",
    "subtree_nodes",
    "verify_consistency",
    "verify_inclusion",
]

HASH_SIZE = 32
EMPTY_ROOT: bytes = hashlib.sha256(b"").digest()

_LEAF_PREFIX = b"\x00"
_NODE_PREFIX = b"\x01"


class ProofError(VerificationError, ValueError):
    """A Merkle proof is malformed or does not verify; the message says why.

    It is a :class:`~cladelog.core.errors.VerificationError` (the command line exits 1):
    hashes and sizes reach these functions already decoded, so a proof that is the wrong
    length or points outside the tree is a proof that does not verify.
    """


def leaf_hash(data: bytes) -> bytes:
    """Return ``SHA-256(0x00 || data)``, the RFC 9162 hash of one leaf."""
    return hashlib.sha256(_LEAF_PREFIX + bytes(data)).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """Return ``SHA-256(0x01 || left || right)``, the RFC 9162 interior node hash."""
    return hashlib.sha256(_NODE_PREFIX + bytes(left) + bytes(right)).digest()


def root_from_leaves(leaf_hashes: Iterable[bytes]) -> bytes:
    """Return the Merkle tree hash over already-hashed leaves, in order.

    Uses a stack of complete subtrees; the empty input gives :data:`EMPTY_ROOT`.
    """
    stack: list[tuple[int, bytes]] = []  # (subtree size, hash), sizes strictly decreasing
    for h in leaf_hashes:
        size, acc = 1, bytes(h)
        while stack and stack[-1][0] == size:
            left_size, left = stack.pop()
            size, acc = left_size + size, node_hash(left, acc)
        stack.append((size, acc))
    if not stack:
        return EMPTY_ROOT
    acc = stack[-1][1]
    for _, left in reversed(stack[:-1]):
        acc = node_hash(left, acc)
    return acc


# -- verification -----------------------------------------------------------------------


def _check_int(name: str, value: object) -> int:
    if type(value) is not int:
        raise ProofError(f"{name}: must be an int, got {type(value).__name__}")
    if value < 0:
        raise ProofError(f"{name}: must be >= 0, got {value}")
    return value


def _check_hash(name: str, value: object) -> bytes:
    if type(value) is bytes and len(value) == HASH_SIZE:  # the usual case, checked first
        return value
    if not isinstance(value, bytes | bytearray | memoryview):
        raise ProofError(f"{name}: must be bytes, got {type(value).__name__}")
    b = bytes(value)
    if len(b) != HASH_SIZE:
        raise ProofError(f"{name}: must be {HASH_SIZE} bytes, got {len(b)}")
    return b


def _check_proof(name: str, proof: object) -> list[bytes]:
    if isinstance(proof, str | bytes | bytearray) or not isinstance(proof, Sequence):
        raise ProofError(f"{name}: must be a sequence of hashes, got {type(proof).__name__}")
    # Plain 32-byte ``bytes`` (the usual case) are taken as they are; anything else goes
    # through _check_hash, so the element's name is only formatted when it is needed.
    return [
        h if type(h) is bytes and len(h) == HASH_SIZE else _check_hash(f"{name}[{i}]", h)
        for i, h in enumerate(proof)
    ]


def root_from_inclusion(leaf_hash: bytes, index: int, size: int, proof: Sequence[bytes]) -> bytes:
    """Recompute the root implied by an inclusion proof (RFC 9162 section 2.1.3.2).

    Raises :class:`ProofError` if the arguments are malformed or the proof has
    the wrong length for ``(index, size)``. The caller must still compare the
    result with a trusted root; :func:`verify_inclusion` does both.
    """
    index = _check_int("index", index)
    size = _check_int("size", size)
    if index >= size:
        raise ProofError(f"index: {index} is not below the tree size {size}")
    acc = _check_hash("leaf_hash", leaf_hash)
    path = _check_proof("proof", proof)
    sha256 = hashlib.sha256  # node_hash inlined: every operand is already checked bytes
    fn, sn = index, size - 1
    for i, sibling in enumerate(path):
        if sn == 0:
            raise ProofError(
                f"proof: too long for index {index} in size {size} (extra element at [{i}])"
            )
        if fn & 1 or fn == sn:
            acc = sha256(_NODE_PREFIX + sibling + acc).digest()  # node_hash(sibling, acc)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            acc = sha256(_NODE_PREFIX + acc + sibling).digest()  # node_hash(acc, sibling)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise ProofError(
            f"proof: too short for index {index} in size {size} (got {len(path)} hashes)"
        )
    return acc


def verify_inclusion(
    leaf_hash: bytes, index: int, size: int, proof: Sequence[bytes], root: bytes
) -> None:
    """Check that ``leaf_hash`` sits at ``index`` in the tree of ``size`` leaves with ``root``.

    Returns ``None`` on success; raises :class:`ProofError` otherwise.
    """
    expected = _check_hash("root", root)
    computed = root_from_inclusion(leaf_hash, index, size, proof)
    if computed != expected:
        raise ProofError(
            f"root: inclusion proof for index {index} in size {size} gives "
            f"{computed.hex()}, expected {expected.hex()}"
        )


def verify_consistency(
    size1: int, size2: int, proof: Sequence[bytes], root1: bytes, root2: bytes
) -> None:
    """Check that the tree ``(size2, root2)`` extends the tree ``(size1, root1)``.

    RFC 9162 section 2.1.4.2 for ``0 < size1 < size2``; equal sizes need an
    empty proof and byte-equal roots; ``size1 == 0`` is always refused.
    Returns ``None`` on success; raises :class:`ProofError` otherwise.
    """
    size1 = _check_int("size1", size1)
    size2 = _check_int("size2", size2)
    if size1 > size2:
        raise ProofError(f"size1: {size1} is larger than size2 {size2}")
    if size1 == 0:
        raise ProofError("size1: a consistency proof from the empty tree proves nothing")
    path = _check_proof("proof", proof)
    if size1 == size2:
        if path:
            raise ProofError(f"proof: must be empty for equal sizes, got {len(path)} hashes")
        if not isinstance(root1, bytes | bytearray) or not isinstance(root2, bytes | bytearray):
            raise ProofError("root1: roots must be bytes")
        if bytes(root1) != bytes(root2):
            raise ProofError(f"root2: differs from root1 at equal size {size1}")
        return
    first = _check_hash("root1", root1)
    second = _check_hash("root2", root2)
    if not path:
        raise ProofError(f"proof: empty, but sizes {size1} and {size2} differ")
    if size1 & (size1 - 1) == 0:  # size1 is a power of two: its root is a tree node
        path = [first, *path]
    fn, sn = size1 - 1, size2 - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for i, c in enumerate(path[1:], start=1):
        if sn == 0:
            raise ProofError(
                f"proof: too long for sizes {size1} -> {size2} (extra element at [{i}])"
            )
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise ProofError(f"proof: too short for sizes {size1} -> {size2}")
    if fr != first:
        raise ProofError(f"root1: proof gives {fr.hex()}, expected {first.hex()}")
    if sr != second:
        raise ProofError(f"root2: proof gives {sr.hex()}, expected {second.hex()}")


# -- proofs from stored complete subtrees ------------------------------------------------
#
# A tree is kept as its *complete subtrees*: node ``(level, index)`` is the hash of the
# ``2**level`` leaves starting at leaf ``index * 2**level`` (level 0: the leaf hashes). Any
# root or proof needs only O(log n) of them, named by the functions below, so the same
# arithmetic serves the in-memory :class:`MerkleTree` and a store that keeps the nodes in
# a table (cladelog's event log): the caller passes a ``fetch`` that returns the hashes of
# the nodes it is asked for, in one read.

Node = tuple[int, int]
"""``(level, index)`` of a complete subtree."""
NodeFetcher = Callable[[Sequence[Node]], Mapping[Node, bytes]]
"""Returns the stored hash of every node asked for (all of them exist)."""


def peak_nodes(size: int) -> list[Node]:
    """The complete subtrees that make up a tree of ``size`` leaves, largest first: one per
    set bit of ``size`` (the tree's *peaks*)."""
    out: list[Node] = []
    lo = 0
    for level in reversed(range(size.bit_length())):
        if size >> level & 1:
            out.append((level, lo >> level))
            lo += 1 << level
    return out


def extend_tree(
    size: int,
    peaks: Sequence[bytes],
    leaf_hashes: Iterable[bytes],
    *,
    every: int = 1,
    leaves: bool = True,
    leaf_data: bool = False,
) -> tuple[list[tuple[int, int, bytes]], list[bytes]]:
    """Append already-hashed leaves to a tree of ``size`` leaves whose peak hashes are
    ``peaks`` (in :func:`peak_nodes` order). Return the complete subtrees the appends
    create at the levels that are multiples of ``every``, as ``(level, index, hash)``
    (the leaves themselves, level 0, only when ``leaves``), and the new peaks.

    With ``leaf_data`` the items are the leaves' bytes, hashed here
    (:func:`leaf_hash`), not their hashes.

    Each leaf creates itself and one node per trailing 1 bit of its index: amortised two
    nodes per leaf, at most ``log2(n) + 1``.
    """
    if len(peaks) != size.bit_count():
        raise ProofError(f"peaks: a tree of size {size} has {size.bit_count()} peaks, "
                         f"got {len(peaks)}")
    stack = [p if type(p) is bytes else bytes(p) for p in peaks]
    nodes: list[tuple[int, int, bytes]] = []
    if leaf_data and not leaves:
        items = iter(leaf_hashes)
        if size & 1:  # the first leaf is a right child: one step of the general loop
            first = next(items, None)
            if first is None:
                return nodes, stack
            _extend(size, stack, (first,), every, leaves, leaf_data, nodes)
            size += 1
        _extend_by_pairs(size, stack, items, every, nodes)
    else:
        _extend(size, stack, leaf_hashes, every, leaves, leaf_data, nodes)
    return nodes, stack


def _extend(n: int, stack: list[bytes], leaf_hashes: Iterable[bytes], every: int,
            leaves: bool, leaf_data: bool, nodes: list[tuple[int, int, bytes]]) -> None:
    """:func:`extend_tree`'s general loop, one leaf at a time, from a tree of ``n``
    leaves; extends ``stack`` and ``nodes``."""
    keep = nodes.append
    sha256 = hashlib.sha256
    prefix, leaf_prefix = _NODE_PREFIX, _LEAF_PREFIX
    pop, push = stack.pop, stack.append
    for h in leaf_hashes:
        if leaf_data:
            acc = sha256(leaf_prefix + h).digest()
        elif type(h) is bytes and len(h) == HASH_SIZE:
            acc = h
        else:
            acc = _check_hash("leaf_hash", h)
        if leaves:
            keep((0, n, acc))
        if n & 1:
            level, index = 0, n
            while index & 1:  # a right child: its left sibling is the smallest peak
                acc = sha256(prefix + pop() + acc).digest()
                level += 1
                index >>= 1
                if level % every == 0:
                    keep((level, index, acc))
        push(acc)
        n += 1


def _extend_by_pairs(size: int, stack: list[bytes], items: Iterator[bytes], every: int,
                     nodes: list[tuple[int, int, bytes]]) -> None:
    """:func:`extend_tree`'s loop for leaf data, the leaves not kept (the store's case),
    from an even ``size``: the leaves come two at a time, hashed straight into their
    parent, which saves a push, a pop and a pass of the loop per pair (about a tenth of
    the tree's time at an append of 1,000 events). Its carry up the right edge is
    :func:`_extend`'s, inlined (a call per pair would cost what the pairing saves).
    Extends ``stack`` and ``nodes``."""
    keep = nodes.append
    sha256 = hashlib.sha256
    prefix, leaf_prefix = _NODE_PREFIX, _LEAF_PREFIX
    pop, push = stack.pop, stack.append
    for a in items:
        b = next(items, None)
        if b is None:
            push(sha256(leaf_prefix + a).digest())
            return
        acc = sha256(prefix + sha256(leaf_prefix + a).digest()
                     + sha256(leaf_prefix + b).digest()).digest()
        index = size >> 1  # the pair's parent: node (1, size / 2)
        size += 2
        level = 1
        if every == 1:
            keep((1, index, acc))
        while index & 1:
            acc = sha256(prefix + pop() + acc).digest()
            level += 1
            index >>= 1
            if level % every == 0:
                keep((level, index, acc))
        push(acc)


def subtree_nodes(lo: int, hi: int) -> list[Node]:
    """The complete subtrees whose hashes give ``MTH(D[lo:hi])`` (``lo`` a multiple of the
    largest power of two ``<= hi - lo``, as in every range a proof uses), largest first."""
    out: list[Node] = []
    while lo < hi:
        k = 1 << ((hi - lo).bit_length() - 1)
        out.append((k.bit_length() - 1, lo // k))
        lo += k
    return out


def _fold(hashes: Sequence[bytes]) -> bytes:
    acc = hashes[-1]
    for left in reversed(hashes[:-1]):
        acc = node_hash(left, acc)
    return acc


def root_from_peaks(peaks: Sequence[bytes]) -> bytes:
    """The root of a tree given its peak hashes (:func:`peak_nodes` order)."""
    return EMPTY_ROOT if not peaks else _fold(peaks)


def _hash_ranges(ranges: Sequence[tuple[int, int]], fetch: NodeFetcher) -> list[bytes]:
    parts = [subtree_nodes(lo, hi) for lo, hi in ranges]
    got = fetch(sorted({node for part in parts for node in part}))
    return [_fold([got[node] for node in part]) for part in parts]


def _largest_power_of_two_below(n: int) -> int:
    """Largest power of two strictly less than ``n`` (``n >= 2``)."""
    return 1 << ((n - 1).bit_length() - 1)


def inclusion_ranges(index: int, size: int) -> list[tuple[int, int]]:
    """The leaf ranges whose hashes form the RFC 9162 audit path of ``index`` in a tree of
    ``size`` leaves, in proof order (the leaf's sibling first). ``0 <= index < size``."""
    ranges: list[tuple[int, int]] = []
    lo, hi, m = 0, size, index
    while hi - lo > 1:  # walk down from the root, collecting siblings top-down
        k = _largest_power_of_two_below(hi - lo)
        if m < k:
            ranges.append((lo + k, hi))
            hi = lo + k
        else:
            ranges.append((lo, lo + k))
            lo, m = lo + k, m - k
    ranges.reverse()
    return ranges


def consistency_ranges(old_size: int, new_size: int) -> list[tuple[int, int]]:
    """The leaf ranges whose hashes form the RFC 9162 consistency proof from ``old_size``
    to ``new_size`` (``0 < old_size <= new_size``), in proof order."""
    if old_size == new_size:
        return []
    ranges: list[tuple[int, int]] = []
    lo, hi, m, complete = 0, new_size, old_size, True
    while m != hi - lo:
        k = _largest_power_of_two_below(hi - lo)
        if m <= k:
            ranges.append((lo + k, hi))
            hi = lo + k
        else:
            ranges.append((lo, lo + k))
            lo, m, complete = lo + k, m - k, False
    if not complete:
        ranges.append((lo, hi))
    ranges.reverse()
    return ranges


def _check_sizes(index: int | None, size: int, stored: int) -> None:
    _check_int("size", size)
    if size > stored:
        raise ProofError(f"size: {size} is out of range [0, {stored}]")
    if index is not None:
        _check_int("index", index)
        if index >= size:
            raise ProofError(f"index: {index} is out of range [0, {size - 1}]")


def stored_root(size: int, fetch: NodeFetcher) -> bytes:
    """``MTH`` of the first ``size`` leaves, from stored complete subtrees."""
    _check_int("size", size)
    return EMPTY_ROOT if size == 0 else _hash_ranges([(0, size)], fetch)[0]


def stored_inclusion_proof(index: int, size: int, fetch: NodeFetcher) -> list[bytes]:
    """The RFC 9162 audit path of leaf ``index`` in the tree of ``size`` leaves."""
    _check_sizes(index, size, size)
    return _hash_ranges(inclusion_ranges(index, size), fetch)


def stored_consistency_proof(old_size: int, new_size: int, fetch: NodeFetcher) -> list[bytes]:
    """The RFC 9162 consistency proof from ``old_size`` to ``new_size`` leaves."""
    _check_sizes(None, new_size, new_size)
    _check_int("old_size", old_size)
    if old_size > new_size:
        raise ProofError(f"old_size: {old_size} is out of range [0, {new_size}]")
    if old_size == 0:
        raise ProofError("old_size: a consistency proof from the empty tree proves nothing")
    return _hash_ranges(consistency_ranges(old_size, new_size), fetch)


# -- the tree ---------------------------------------------------------------------------


class MerkleTree:
    """An in-memory, append-only RFC 9162 Merkle tree.

    ``_levels[k][i]`` holds the hash of the complete subtree of ``2**k`` leaves
    starting at leaf ``i * 2**k``; appending a leaf updates at most
    ``log2(n)`` entries. Proofs and roots for any earlier size are served from
    those stored hashes by the same functions a store uses
    (:func:`stored_root`, :func:`stored_inclusion_proof`, :func:`stored_consistency_proof`).
    """

    __slots__ = ("_levels", "_peaks")

    def __init__(self, leaf_hashes: Iterable[bytes] = ()) -> None:
        self._levels: list[list[bytes]] = [[]]
        self._peaks: list[bytes] = []
        self.extend(leaf_hashes)

    @property
    def size(self) -> int:
        """Number of leaves appended so far."""
        return len(self._levels[0])

    def append(self, leaf_bytes: bytes) -> int:
        """Append a leaf (its data, hashed with :func:`leaf_hash`); return its 0-based index."""
        return self.append_leaf_hash(leaf_hash(leaf_bytes))

    def append_leaf_hash(self, leaf_hash: bytes) -> int:
        """Append an already-hashed leaf; return its 0-based index."""
        index = self.size
        self.extend([leaf_hash])
        return index

    def extend(self, leaf_hashes: Iterable[bytes]) -> None:
        """Append already-hashed leaves."""
        nodes, self._peaks = extend_tree(self.size, self._peaks, leaf_hashes)
        levels = self._levels
        for level, _, h in nodes:  # created in index order within each level
            if level == len(levels):
                levels.append([])
            levels[level].append(h)

    def leaf_hash(self, index: int) -> bytes:
        """The stored hash of leaf ``index``."""
        self._check_range("index", index, self.size - 1)
        return self._levels[0][index]

    def node(self, level: int, index: int) -> bytes:
        """The stored hash of complete subtree ``(level, index)``."""
        return self._levels[level][index]

    def _fetch(self, wanted: Sequence[Node]) -> dict[Node, bytes]:
        levels = self._levels
        return {(k, i): levels[k][i] for k, i in wanted}

    def root(self, size: int | None = None) -> bytes:
        """Root hash of the first ``size`` leaves (default: all of them)."""
        n = self.size if size is None else self._check_range("size", size, self.size)
        return stored_root(n, self._fetch)

    def inclusion_proof(self, index: int, size: int | None = None) -> list[bytes]:
        """RFC 9162 audit path for leaf ``index`` in the tree of the first ``size`` leaves."""
        n = self.size if size is None else self._check_range("size", size, self.size)
        self._check_range("index", index, n - 1)
        return stored_inclusion_proof(index, n, self._fetch)

    def consistency_proof(self, old_size: int, new_size: int | None = None) -> list[bytes]:
        """RFC 9162 consistency proof from ``old_size`` to ``new_size`` (``0 < old <= new``)."""
        n = self.size if new_size is None else self._check_range("new_size", new_size, self.size)
        m = self._check_range("old_size", old_size, n)
        return stored_consistency_proof(m, n, self._fetch)

    def _check_range(self, name: str, value: object, top: int) -> int:
        v = _check_int(name, value)
        if v > top:
            raise ProofError(f"{name}: {v} is out of range [0, {top}]")
        return v
