"""The always-on master loop (SPEC §1.14, ``master-loop``): a cost-ordered solve ladder.

Per problem it takes the first arm that resolves:

1. **escalate** — the method class is pinned at the escalate floor: forge, never cache;
2. **match** — exact cache hit on the signature key: cost 0;
3. **recall** — fuzzy recall then typed verification: *full* reuses the method (cost 0),
   *partial* re-forges only the differing content keys;
4. **forge** — the expensive path; the result warms the cache and the recall index.

:meth:`MasterLoop.drift` invalidates a method (cache and index) and records a deopt. The
caller injects ``forge`` and optionally ``signature`` (default: the problem is the
structure, the content empty, as the seed's) and ``re_forge`` (sync or async). With a
``sink`` every solve and drift is a record, so the library state is a projection
(:mod:`.projection`).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Generator, Mapping
from typing import Any, Final

import attrs

from ._util import canon, digest, resolve_sync
from .cache import MemoryCache, MethodCache, as_method_cache
from .errors import AuthoringError
from .mount import ESCALATE, INSTANCE, MountController, normalize_signals
from .recall import RecallIndex, VerifiedCandidate, normalize_signature, recall_and_verify

__all__ = [
    "ARMS",
    "DRIFTED",
    "SOLVED",
    "DriftResult",
    "ForgeContext",
    "Forged",
    "MasterLoop",
    "MasterLoopStats",
    "SolveResult",
    "class_id",
    "signature_key",
]

SOLVED: Final = "master_loop.solved"
DRIFTED: Final = "master_loop.drifted"
ARMS: Final = ("escalate", "match", "recall-full", "recall-partial", "forge")

Sink = Callable[[str, dict[str, Any]], None]


@attrs.frozen
class Forged:
    """What ``forge``/``re_forge`` return (a mapping with the same keys is accepted)."""

    result: Any
    cost: float = 0
    signals: Mapping[str, Any] | None = None


@attrs.frozen
class ForgeContext:
    """Passed to ``forge``/``re_forge``: the method class id, the signature and the regime."""

    id: str
    signature: Mapping[str, Any]
    regime: str | None


@attrs.frozen
class SolveResult:
    """The outcome of one solve."""

    result: Any
    arm: str
    regime: str
    cost: float
    re_forged: tuple[str, ...] | None = None


@attrs.frozen
class DriftResult:
    """The outcome of one drift: the class id, its deopt count and its regime."""

    id: str
    deopts: int
    regime: str


@attrs.frozen
class MasterLoopStats:
    """Counters of the ladder's arms, the total cost and the number of solves.

    A solve counts once it completed and its ``master_loop.solved`` record was emitted: a
    solve whose forge raised or returned something malformed is not counted (the reference
    counts ``calls`` and the arm before forging), so these stats always equal the fold of
    the records.
    """

    match: int = 0
    recall_full: int = 0
    recall_partial: int = 0
    forge: int = 0
    escalate: int = 0
    cost: float = 0
    calls: int = 0


_STAT_OF_ARM: Final = {"escalate": "escalate", "match": "match", "recall-full": "recall_full",
                       "recall-partial": "recall_partial", "forge": "forge"}


def _identify(raw: Any, path: str) -> tuple[dict[str, Any], str, str]:
    """``(signature, key, class id)`` of a raw signature, canonicalizing each part once."""
    if not isinstance(raw, Mapping) or "structure" not in raw:
        raise AuthoringError(f"{path}: must be an object with a 'structure' member")
    sig = {"structure": raw["structure"], "content": raw.get("content", {})}
    s_text = canon(sig["structure"], f"{path}.structure")
    c_text = canon(sig["content"], f"{path}.content")
    return sig, digest({"s": s_text, "c": c_text}), digest({"s": s_text})


def signature_key(sig: Mapping[str, Any]) -> str:
    """``digest({s: canon(structure), c: canon(content)})``: the exact-match cache key."""
    return digest({"s": canon(sig["structure"]), "c": canon(sig.get("content", {}))})


def class_id(sig: Mapping[str, Any]) -> str:
    """``digest({s: canon(structure)})``: the method-class id (the mount and deopt key)."""
    return digest({"s": canon(sig["structure"])})


def _forged(value: Any, where: str) -> Forged:
    if isinstance(value, Forged):
        out = value
    elif isinstance(value, Mapping):
        out = Forged(value.get("result"), value.get("cost") or 0, value.get("signals"))
    else:
        raise AuthoringError(f"{where}: must return Forged or {{'result', 'cost', 'signals'}}, "
                             f"got {type(value).__name__}")
    cost = out.cost
    if isinstance(cost, bool) or not isinstance(cost, int | float) or not math.isfinite(cost):
        raise AuthoringError(f"{where}.cost: must be a finite number, got {cost!r}")
    if out.signals is not None and not isinstance(out.signals, Mapping):
        raise AuthoringError(f"{where}.signals: must be an object")
    canon(out.result, f"{where}.result")  # results are cached and recorded: JSON only
    return out


def _problem_as_structure(problem: Any) -> dict[str, Any]:
    """The default signature, as the seed's: the whole problem is the structure."""
    return {"structure": problem, "content": {}}


class MasterLoop:
    """The solve ladder over a pluggable cache, recall index and mount controller.

    ``signature(problem)`` gives ``{"structure", "content"}``; by default the whole problem
    is the structure and the content is empty (so every distinct problem is its own method
    class, matched exactly). ``forge`` is required.
    """

    def __init__(
        self,
        signature: Callable[[Any], Mapping[str, Any]] | None = None,
        forge: Callable[[Any, ForgeContext], Any] | None = None,
        re_forge: Callable[[Any, VerifiedCandidate, tuple[str, ...], ForgeContext], Any]
        | None = None,
        cache: MethodCache | None = None,
        index: RecallIndex | None = None,
        mount: MountController | None = None,
        recall_k: int = 3,
        signals: Callable[[Any, str], Mapping[str, Any]] | None = None,
        sink: Sink | None = None,
    ) -> None:
        if signature is None:
            signature = _problem_as_structure
        if not callable(signature):
            raise AuthoringError("signature: must be callable")
        if forge is None or not callable(forge):
            raise AuthoringError("forge: is required and must be callable")
        if isinstance(recall_k, bool) or not isinstance(recall_k, int) or recall_k < 1:
            raise AuthoringError(f"recall_k: must be a positive integer, got {recall_k!r}")
        self._signature = signature
        self._forge = forge
        self._re_forge = re_forge or (lambda problem, cand, keys, ctx: forge(problem, ctx))
        self.cache: MethodCache = MemoryCache() if cache is None else as_method_cache(cache)
        self.index = index if index is not None else RecallIndex()
        self.mount = mount if mount is not None else MountController()
        self.recall_k = recall_k
        self._signals = signals or (lambda problem, mid: {})
        self._sink = sink
        self._counts = dict.fromkeys(("match", "recall_full", "recall_partial", "forge",
                                      "escalate", "calls"), 0)
        self._cost: float = 0
        self._hits: dict[str, list[int]] = {}

    # ------------------------------------------------------------------ helpers

    @property
    def stats(self) -> MasterLoopStats:
        """A snapshot of the counters."""
        return MasterLoopStats(cost=self._cost, **self._counts)

    def hits(self) -> dict[str, tuple[int, int]]:
        """``{method class id: (hits, solves)}``."""
        return {mid: (h[0], h[1]) for mid, h in self._hits.items()}

    def restore_counters(self, stats: MasterLoopStats,
                         hits: Mapping[str, tuple[int, int]]) -> None:
        """Continue counting from a projected library (its stats and per-class hits), so a
        restarted loop computes the same hit rates, hence the same regimes, as one that
        never stopped. Emits nothing."""
        if not isinstance(stats, MasterLoopStats):
            raise AuthoringError(f"stats: must be MasterLoopStats, got {type(stats).__name__}")
        counts = attrs.asdict(stats)
        self._cost = counts.pop("cost")
        self._counts = counts
        restored: dict[str, list[int]] = {}
        for mid, pair in hits.items():
            if (not isinstance(pair, tuple | list) or len(pair) != 2
                    or not all(isinstance(n, int) and not isinstance(n, bool) for n in pair)):
                raise AuthoringError(f"hits.{mid}: must be a (hits, solves) pair of integers")
            restored[str(mid)] = [pair[0], pair[1]]
        self._hits = restored

    def key_of(self, sig: Mapping[str, Any]) -> str:
        """The exact-match cache key of a signature."""
        return signature_key(normalize_signature(sig))

    def id_of(self, sig: Mapping[str, Any]) -> str:
        """The method-class id of a signature."""
        return class_id(normalize_signature(sig))

    def hit_rate(self, mid: str) -> float:
        """Hits / solves of method class ``mid`` (0 when unseen)."""
        hit, total = self._hits.get(mid, (0, 0))
        return hit / total if total else 0.0

    def _bump(self, mid: str, hit: bool) -> None:
        h = self._hits.setdefault(mid, [0, 0])
        h[1] += 1
        if hit:
            h[0] += 1

    def _signals_for(self, problem: Any, mid: str, hit: bool,
                     extra: Mapping[str, Any] | None) -> dict[str, Any]:
        """The decide call's signals, checked: ``{hitRate}`` (counting this solve), then the
        caller's ``signals(problem, id)``, then the forge's ``signals`` (later wins, as the
        reference's ``Object.assign``); each layer may use either spelling."""
        hits, total = self._hits.get(mid, (0, 0))
        merged: dict[str, Any] = {"hit_rate": (hits + hit) / (total + 1)}
        merged.update(normalize_signals(self._signals(problem, mid), "signals(problem)"))
        if extra is not None:
            merged.update(normalize_signals(extra, "forge.signals"))
        return merged

    def _mount_json(self, mid: str) -> dict[str, Any]:
        s = self.mount.state_of(mid)
        return {"regime": s.regime, "deoptCount": s.deopt_count, "widenCount": s.widen_count}

    def _record(self, kind: str, data: dict[str, Any]) -> None:
        if self._sink is not None:
            self._sink(kind, data)

    # ------------------------------------------------------------------ the ladder

    def _ladder(self, problem: Any) -> Generator[Any, Any, SolveResult]:
        """The solve logic; yields a forge call's raw return and receives its value.

        Nothing changes until every fallible step is done: a forge that raises or returns
        something malformed, or bad signals, leave the cache, the index, the mount state and
        the stats as they were, and no record is written. The stats count a solve only
        once its ``master_loop.solved`` record is emitted, so they always equal the fold of
        the records (:func:`~.projection.fold_records`).
        """
        sig, key, mid = _identify(self._signature(problem), "signature(problem)")
        arm: str
        result: Any
        cost: float = 0
        cached = indexed = hit = False
        re_forged: tuple[str, ...] | None = None
        extra: Mapping[str, Any] | None = None
        if self.mount.regime_of(mid) == ESCALATE:
            arm = "escalate"
            forged = _forged((yield self._forge(problem, ForgeContext(mid, sig, ESCALATE))),
                             "forge")
            result, cost = forged.result, forged.cost
        elif self.cache.has(key):
            arm, hit, result = "match", True, self.cache.get(key)
        else:
            cand = recall_and_verify(self.index, sig, self.recall_k)
            if cand is not None and cand.verdict.mode == "full":
                arm, hit, result, cached = "recall-full", True, cand.hit.method, True
            elif cand is not None:
                arm, re_forged = "recall-partial", cand.verdict.re_forge
                forged = _forged((yield self._re_forge(problem, cand, re_forged,
                                                       ForgeContext(mid, sig, None))), "re_forge")
                result, cost, cached, indexed = forged.result, forged.cost, True, True
            else:
                arm = "forge"
                forged = _forged((yield self._forge(problem, ForgeContext(mid, sig, INSTANCE))),
                                 "forge")
                result, cost, cached, indexed = forged.result, forged.cost, True, True
                extra = forged.signals
        signals = None if arm == "escalate" else self._signals_for(problem, mid, hit, extra)
        # commit: from here on nothing the caller supplied is checked any more
        if cached:
            self.cache.set(key, result)
        if indexed:
            self.index.add(sig, result)
        regime = ESCALATE if signals is None else self.mount.decide(mid, signals).regime
        data: dict[str, Any] = {"arm": arm, "key": key, "id": mid, "signature": sig,
                                "cost": cost, "regime": regime, "hit": hit, "cached": cached,
                                "indexed": indexed, "mount": self._mount_json(mid)}
        if cached:
            data["result"] = result
        if re_forged is not None:
            data["reForged"] = list(re_forged)
        self._record(SOLVED, data)
        self._counts[_STAT_OF_ARM[arm]] += 1
        self._counts["calls"] += 1
        self._cost += cost
        self._bump(mid, hit)
        return SolveResult(result, arm, regime, cost, re_forged)

    def solve(self, problem: Any) -> SolveResult:
        """Climb the ladder for ``problem``. An async forge is run to completion (use
        :meth:`asolve` inside an event loop)."""
        ladder = self._ladder(problem)
        try:
            pending = next(ladder)
            while True:
                pending = ladder.send(resolve_sync(pending, "forge"))
        except StopIteration as stop:
            out: SolveResult = stop.value
            return out

    async def asolve(self, problem: Any) -> SolveResult:
        """:meth:`solve` for async ``forge``/``re_forge``."""
        ladder = self._ladder(problem)
        try:
            pending = next(ladder)
            while True:
                value = (await pending) if inspect.isawaitable(pending) else pending
                pending = ladder.send(value)
        except StopIteration as stop:
            out: SolveResult = stop.value
            return out

    def drift(self, problem: Any) -> DriftResult:
        """A premise changed: drop the method from the cache and the recall index and record
        a deopt (the regime descends toward escalate)."""
        sig, key, mid = _identify(self._signature(problem), "signature(problem)")
        self.cache.delete(key)
        self.index.remove(sig)
        deopts = self.mount.record_deopt(mid)
        regime = self.mount.regime_of(mid)
        self._record(DRIFTED, {"key": key, "id": mid, "signature": sig, "deopts": deopts,
                               "regime": regime, "mount": self._mount_json(mid)})
        return DriftResult(mid, deopts, regime)
