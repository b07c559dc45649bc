"""Fuzzy recall of known methods plus typed verification (SPEC §1.14, ``recall``).

A *signature* is ``{"structure": ..., "content": ...}``: the structure names the method
class, the content is what the method derives from. Recall ranks stored signatures by
similarity (default: cosine over a token multiset); verification decides, never the score:
a candidate with a different structure is rejected, one whose content differs in some keys
is a *partial* match (re-forge only those keys), an identical one is a *full* match.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs

from ._util import canon, js_string
from .errors import AuthoringError

__all__ = [
    "FULL",
    "PARTIAL",
    "REJECT",
    "RecallHit",
    "RecallIndex",
    "Verdict",
    "VerifiedCandidate",
    "cosine",
    "normalize_signature",
    "recall_and_verify",
    "token_embedding",
    "verify",
]

REJECT: Final = "reject"
PARTIAL: Final = "partial"
FULL: Final = "full"
_MAX_DEPTH: Final = 64

Embedding = Mapping[str, float]
Embed = Callable[[Any], Embedding]
Similarity = Callable[[Embedding, Embedding], float]


def normalize_signature(sig: Any, path: str = "signature") -> dict[str, Any]:
    """``{"structure", "content"}`` with content defaulting to ``{}``; checks it is JSON."""
    if not isinstance(sig, Mapping) or "structure" not in sig:
        raise AuthoringError(f"{path}: must be an object with a 'structure' member")
    out = {"structure": sig["structure"], "content": sig.get("content", {})}
    canon(out, path)  # raises on a non-JSON value, naming its path
    return out


def _walk(value: Any, out: Counter[str], depth: int) -> None:
    if value is None or depth > _MAX_DEPTH:
        return
    if isinstance(value, Mapping):
        items: list[tuple[str, Any]] = [(str(k), v) for k, v in value.items()]
    elif isinstance(value, list | tuple):
        items = [(str(i), v) for i, v in enumerate(value)]
    else:
        out[js_string(value)] += 1
        return
    for key, item in items:
        out["k:" + key] += 1
        _walk(item, out, depth + 1)


def token_embedding(sig: Any) -> Embedding:
    """The default embedding: a multiset of tokens over the signature.

    Each key ``k`` contributes ``"k:" + k`` and its value is walked; arrays count as objects
    keyed ``"0"``, ``"1"``…; other values contribute their string form; nulls are skipped.
    """
    out: Counter[str] = Counter()
    _walk(sig, out, 0)
    return dict(out)


def _norm(a: Embedding) -> float:
    return math.sqrt(sum(v * v for v in a.values()))


def _cosine(a: Embedding, na: float, b: Embedding, nb: float) -> float:
    if na == 0 or nb == 0:
        return 0.0
    if len(b) < len(a):
        a, b = b, a
    dot = sum(v * b.get(k, 0.0) for k, v in a.items())
    return dot / (na * nb)


def cosine(a: Embedding, b: Embedding) -> float:
    """Cosine similarity of two sparse vectors (0 when either is empty)."""
    return _cosine(a, _norm(a), b, _norm(b))


@attrs.frozen
class RecallHit:
    """A recalled entry: its stored signature, method and similarity score."""

    signature: Mapping[str, Any]
    method: Any
    score: float


@attrs.frozen
class Verdict:
    """``mode`` is reject / partial / full; ``re_forge`` the differing content keys;
    ``reuse`` the keys kept from the candidate."""

    mode: str
    re_forge: tuple[str, ...] = ()
    reuse: tuple[str, ...] = ()


@attrs.frozen
class VerifiedCandidate:
    """A recalled entry together with its verification verdict."""

    hit: RecallHit
    verdict: Verdict


@attrs.frozen
class _Entry:
    signature: Mapping[str, Any]
    canon: str
    method: Any
    vector: Embedding
    norm: float


class RecallIndex:
    """An in-memory recall index over signatures (insertion-ordered)."""

    def __init__(self, embed: Embed | None = None, sim: Similarity | None = None) -> None:
        self._embed = embed or token_embedding
        self._sim = sim or cosine
        self._entries: list[_Entry] = []

    def add(self, sig: Any, method: Any) -> None:
        """Store ``method`` under signature ``sig``."""
        norm = normalize_signature(sig)
        vector = self._embed(norm)
        self._entries.append(_Entry(norm, canon(norm), method, vector, _norm(vector)))

    def recall(self, sig: Any, k: int = 3) -> list[RecallHit]:
        """The top ``k`` entries by similarity, descending; ties keep insertion order."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise AuthoringError(f"k: must be a non-negative integer, got {k!r}")
        query = self._embed(normalize_signature(sig))
        entries = self._entries
        if self._sim is cosine:  # the default: entry norms are computed once, at add
            qn = _norm(query)
            scores = [_cosine(query, qn, e.vector, e.norm) for e in entries]
        else:
            scores = [self._sim(query, e.vector) for e in entries]
        order = sorted(range(len(entries)), key=lambda i: -scores[i])  # stable on ties
        return [RecallHit(entries[i].signature, entries[i].method, scores[i])
                for i in order[:k]]

    def remove(self, sig: Any) -> int:
        """Delete the entries whose whole signature canonicalizes like ``sig``; return how many."""
        key = canon(normalize_signature(sig))
        before = len(self._entries)
        self._entries = [e for e in self._entries if e.canon != key]
        return before - len(self._entries)

    def size(self) -> int:
        """The number of stored entries."""
        return len(self._entries)

    def entries(self) -> list[tuple[Mapping[str, Any], Any]]:
        """``(signature, method)`` of every entry, in insertion order."""
        return [(e.signature, e.method) for e in self._entries]


def _keys(value: Any) -> list[str]:
    return sorted(str(k) for k in value) if isinstance(value, Mapping) else []


def _empty(structure: Any) -> bool:
    return structure is None or (isinstance(structure, Mapping | list | tuple)
                                 and len(structure) == 0)


def verify(query: Any, candidate: Any) -> Verdict:
    """Typed verification of a recalled candidate signature against the query signature.

    Reject when the query's structure is empty or the structures differ canonically; else
    ``re_forge`` = the sorted content keys (over both sides) whose values differ: partial
    when any, with ``reuse`` = the structure keys; otherwise full, with ``reuse`` = the
    structure keys then the content keys.
    """
    q = normalize_signature(query, "query")
    c = normalize_signature(candidate, "candidate")
    if _empty(q["structure"]) or canon(q["structure"]) != canon(c["structure"]):
        return Verdict(REJECT)
    qc = q["content"] if isinstance(q["content"], Mapping) else {}
    cc = c["content"] if isinstance(c["content"], Mapping) else {}
    differing = sorted(k for k in set(qc) | set(cc) if canon(qc.get(k)) != canon(cc.get(k)))
    structure_keys = _keys(q["structure"])
    if differing:
        return Verdict(PARTIAL, tuple(differing), tuple(structure_keys))
    return Verdict(FULL, (), tuple(structure_keys + _keys(qc)))


def recall_and_verify(index: RecallIndex, query: Any, k: int = 3) -> VerifiedCandidate | None:
    """The first *full* candidate among the top ``k``, else the first *partial*, else None."""
    partial: VerifiedCandidate | None = None
    for hit in index.recall(query, k):
        verdict = verify(query, hit.signature)
        if verdict.mode == FULL:
            return VerifiedCandidate(hit, verdict)
        if verdict.mode == PARTIAL and partial is None:
            partial = VerifiedCandidate(hit, verdict)
    return partial
