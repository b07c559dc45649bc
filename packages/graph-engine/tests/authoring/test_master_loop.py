"""The master loop's ladder, its records, the projection and the recorded cache."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from cladelog.graph_engine.authoring import AuthoringError
from cladelog.graph_engine.authoring.cache import MemoryCache, RecordingCache
from cladelog.graph_engine.authoring.master_loop import (
    DRIFTED,
    SOLVED,
    Forged,
    MasterLoop,
    MasterLoopStats,
    SolveResult,
)
from cladelog.graph_engine.authoring.mount import MountController, MountThresholds
from cladelog.graph_engine.authoring.projection import LibraryState, apply_record, fold_records

P1 = ("sum", {"a": 1})
P2 = ("sum", {"a": 2})
P3 = ("max", {"a": 1})


def signature(problem: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"structure": {"op": problem[0]}, "content": problem[1]}


class Forger:
    """A scripted forge (cost 10) and partial re-forge (cost 3), recording every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any, Any]] = []

    def forge(self, problem: Any, ctx: Any) -> Forged:
        self.calls.append(("forge", problem[1].get("a"), ctx.regime))
        return Forged({"method": problem[0], "a": problem[1]["a"]}, 10)

    def re_forge(self, problem: Any, cand: Any, keys: tuple[str, ...], ctx: Any) -> Any:
        self.calls.append(("re_forge", problem[1].get("a"), keys))
        return {"result": {**cand.hit.method, "a": problem[1]["a"]}, "cost": 3}


def _ladder(loop: MasterLoop) -> list[str]:
    out: list[str] = []
    script: list[tuple[str, Any]] = [
        ("solve", P1), ("solve", P1), ("solve", P2), ("solve", P2), ("solve", P3),
        ("drift", P1), ("solve", P1), ("drift", P1), ("solve", P1), ("solve", P2),
        ("solve", P3)]
    for op, problem in script:
        if op == "solve":
            out.append(loop.solve(problem).arm)
        else:
            d = loop.drift(problem)
            out.append(f"drift:{d.deopts}:{d.regime}")
    return out


def test_scripted_ladder_arm_sequence() -> None:
    forger = Forger()
    records: list[tuple[str, dict[str, Any]]] = []
    loop = MasterLoop(signature, forger.forge, forger.re_forge,
                      mount=MountController(MountThresholds(max_deopt=2)),
                      sink=lambda k, d: records.append((k, d)))
    arms = _ladder(loop)
    assert arms == [
        "forge",           # P1 is new
        "match",           # exact cache hit
        "recall-partial",  # P2 shares P1's structure; content key "a" differs
        "match",
        "forge",           # P3 is another class: every recalled candidate is rejected
        "drift:1:instance",
        "recall-partial",  # P1 was dropped from cache and index; P2's entry is recalled
        "drift:2:escalate",  # two deopts reach max_deopt = 2
        "escalate",
        "escalate",        # P2 is the same class as P1
        "match",           # P3's class is untouched
    ]
    assert forger.calls == [
        ("forge", 1, "instance"), ("re_forge", 2, ("a",)), ("forge", 1, "instance"),
        ("re_forge", 1, ("a",)), ("forge", 1, "escalate"), ("forge", 2, "escalate")]
    # 9 solves: 3 match, 2 partial, 2 forge, 2 escalate; cost 2·10 + 2·3 + 2·10 = 46
    assert loop.stats == MasterLoopStats(match=3, recall_full=0, recall_partial=2, forge=2,
                                         escalate=2, cost=46, calls=9)
    assert [k for k, _ in records].count(SOLVED) == 9
    assert [k for k, _ in records].count(DRIFTED) == 2


def test_projection_reproduces_the_live_library() -> None:
    forger = Forger()
    records: list[tuple[str, dict[str, Any]]] = []
    cache = MemoryCache()
    loop = MasterLoop(signature, forger.forge, forger.re_forge, cache=cache,
                      mount=MountController(MountThresholds(max_deopt=2)),
                      sink=lambda k, d: records.append((k, d)))
    _ladder(loop)
    state = fold_records(records)
    assert state.stats == loop.stats
    assert dict(state.cache) == cache.items()
    assert [(dict(s), m) for s, m in state.index] == [
        (dict(s), m) for s, m in loop.index.entries()]
    assert dict(state.mounts) == loop.mount.states()
    # per-class hits: "sum" 2 hits / 7 solves; "max" 1 / 2
    assert sorted(state.hits.values()) == [(1, 2), (2, 7)]
    # apply_record is a pure one-step fold giving the same result
    step = LibraryState()
    for record in records:
        before = step
        step = apply_record(step, record)
        assert before is not step
    assert step == state
    assert apply_record(state, ("unrelated.event", {})) == state
    with pytest.raises(AuthoringError, match=r"records\[0\]\.arm: unknown arm"):
        apply_record(state, (SOLVED, {"arm": "guess", "key": "k"}))


def test_projection_restores_a_working_loop() -> None:
    forger = Forger()
    records: list[tuple[str, dict[str, Any]]] = []
    loop = MasterLoop(signature, forger.forge, forger.re_forge,
                      sink=lambda k, d: records.append((k, d)))
    loop.solve(P1)
    state = fold_records(records)
    again = MasterLoop(signature, forger.forge, forger.re_forge,
                       cache=MemoryCache(state.cache), index=state.build_index(),
                       mount=state.build_mount())
    assert again.solve(P1).arm == "match"
    assert again.solve(P2).arm == "recall-partial"
    assert len(forger.calls) == 2  # one forge before the restart, one re-forge after


def test_recording_cache_survives_restart_and_replay() -> None:
    forger = Forger()
    log: list[tuple[str, dict[str, Any]]] = []
    sink = lambda k, d: log.append((k, d))  # noqa: E731
    loop = MasterLoop(signature, forger.forge, forger.re_forge, cache=RecordingCache(sink))
    loop.solve(P1)
    loop.solve(P2)
    assert [k for k, _ in log] == ["authoring.cache_set", "authoring.cache_set"]
    # restart: a fresh process rebuilds the cache from the records alone
    restarted = MasterLoop(signature, forger.forge, forger.re_forge,
                           cache=RecordingCache.replay(log, sink))
    calls_before = len(forger.calls)
    assert restarted.solve(P1) == SolveResult({"method": "sum", "a": 1}, "match", "instance", 0)
    assert restarted.solve(P2).arm == "match"
    assert len(forger.calls) == calls_before  # the method library came back from the log
    restarted.drift(P1)
    assert log[-1][0] == "authoring.cache_deleted"
    replayed = RecordingCache.replay(log)
    assert replayed.has(restarted.key_of(signature(P2)))
    assert not replayed.has(restarted.key_of(signature(P1)))
    with pytest.raises(AuthoringError, match=r"records\[0\]\.key: must be a string"):
        RecordingCache.replay([("authoring.cache_set", {"value": 1})])
    with pytest.raises(AuthoringError, match=r"cache\[k\]: not a JSON value"):
        RecordingCache().set("k", object())


def test_recall_full_caches_without_cost() -> None:
    forger = Forger()
    cache = MemoryCache()
    loop = MasterLoop(signature, forger.forge, cache=cache)
    loop.solve(P1)
    cache.delete(loop.key_of(signature(P1)))  # the index still knows the method
    r = loop.solve(P1)
    assert (r.arm, r.cost, r.result) == ("recall-full", 0, {"method": "sum", "a": 1})
    assert cache.has(loop.key_of(signature(P1)))
    assert loop.stats.recall_full == 1


def test_mount_regimes_climb_with_the_hit_rate() -> None:
    forger = Forger()
    loop = MasterLoop(signature, forger.forge,
                      signals=lambda p, mid: {"reliability": 1.0, "read_only_frontier": True,
                                              "depth": 0})
    regimes = [loop.solve(P1).regime for _ in range(7)]
    # hit rate after n solves = (n−1)/n: 0, .5, .667 (≥ .65 inline), .75, .8, .833, .857 (≥ .85)
    assert regimes == ["instance", "instance", "inline", "inline", "inline", "inline", "frozen"]


def test_forge_signals_reach_the_mount() -> None:
    loop = MasterLoop(signature, lambda p, ctx: {"result": 1, "signals": {
        "reliability": 1, "hit_rate": 1, "read_only_frontier": True}})
    assert loop.solve(P1).regime == "frozen"


def test_the_default_signature_is_the_problem_as_structure() -> None:
    # the seed's createMasterLoop: signature defaults to p -> {structure: p, content: {}}
    records: list[tuple[str, dict[str, Any]]] = []
    forged: list[Any] = []

    def forge(problem: Any, ctx: Any) -> Forged:
        forged.append((problem, ctx.signature))
        return Forged({"for": problem["op"]}, 5)

    loop = MasterLoop(forge=forge, sink=lambda k, d: records.append((k, d)))
    problem = {"op": "sum", "n": 2}
    assert loop.solve(problem).arm == "forge"
    assert loop.solve({"n": 2, "op": "sum"}).arm == "match"  # the same structure, any order
    assert loop.solve({"op": "sum", "n": 3}).arm == "forge"  # another structure: no recall
    assert forged[0] == (problem, {"structure": problem, "content": {}})
    solved = [d for k, d in records if k == SOLVED]
    assert solved[0]["signature"] == {"structure": problem, "content": {}}
    assert solved[0]["key"] == loop.key_of({"structure": problem})
    with pytest.raises(AuthoringError, match="forge: is required"):
        MasterLoop()


def test_async_forge_and_bad_input() -> None:
    async def forge(problem: Any, ctx: Any) -> Any:
        await asyncio.sleep(0)
        return Forged("async", 2)

    loop = MasterLoop(signature, forge)
    assert asyncio.run(loop.asolve(P1)).result == "async"
    assert loop.solve(P2).arm == "recall-partial"  # default re-forge: a full forge, run to end
    with pytest.raises(AuthoringError, match="forge: is required"):
        MasterLoop(signature, None)  # type: ignore[arg-type]
    with pytest.raises(AuthoringError, match="recall_k: must be a positive integer"):
        MasterLoop(signature, forge, recall_k=0)
    bad = MasterLoop(signature, lambda p, ctx: "not forged")
    with pytest.raises(AuthoringError, match="forge: must return Forged"):
        bad.solve(P1)
    no_sig = MasterLoop(lambda p: {"content": {}}, forge)
    with pytest.raises(AuthoringError, match=r"signature\(problem\): must be an object"):
        no_sig.solve(P1)
    nan_cost = MasterLoop(signature, lambda p, ctx: {"result": 1, "cost": float("nan")})
    with pytest.raises(AuthoringError, match=r"forge\.cost: must be a finite number"):
        nan_cost.solve(P1)


def test_a_plain_dict_is_a_live_cache_and_results_must_be_json() -> None:
    forger = Forger()
    store: dict[str, Any] = {}
    loop = MasterLoop(signature, forger.forge, cache=store)  # type: ignore[arg-type]
    loop.solve(P1)
    assert store == {loop.key_of(signature(P1)): {"method": "sum", "a": 1}}
    assert loop.solve(P1).arm == "match"
    with pytest.raises(AuthoringError, match="cache: must have has/get/set/delete"):
        MasterLoop(signature, forger.forge, cache=5)  # type: ignore[arg-type]
    bad = MasterLoop(signature, lambda p, ctx: {"result": {"x": float("nan")}})
    with pytest.raises(AuthoringError, match=r"forge\.result\.x: must be a finite number"):
        bad.solve(P1)
    # nothing was cached, recorded or counted: a call counts once its record is emitted
    assert bad.stats == MasterLoopStats()


def test_folds_reject_malformed_records() -> None:
    with pytest.raises(AuthoringError, match="records: must be a list of"):
        fold_records(5)  # type: ignore[arg-type]
    with pytest.raises(AuthoringError, match="records: must be a list of"):
        RecordingCache.replay(5)  # type: ignore[arg-type]
    with pytest.raises(AuthoringError, match=r"records\[0\]\.signature: an indexed solve"):
        fold_records([(SOLVED, {"arm": "forge", "key": "k", "id": "i", "indexed": True,
                                "signature": 5})])


def test_camel_case_signals_climb_to_frozen_like_snake_case() -> None:
    forger = Forger()
    loop = MasterLoop(signature, forger.forge,
                      signals=lambda p, mid: {"reliability": 1.0, "readOnlyFrontier": True,
                                              "depth": 0})
    regimes = [loop.solve(P1).regime for _ in range(7)]
    # hit rate after n solves = (n−1)/n: 0, .5, .667 (≥ .65 inline), .75, .8, .833, .857 (≥ .85)
    assert regimes == ["instance", "instance", "inline", "inline", "inline", "inline", "frozen"]
    # the forge's camelCase hitRate overrides the loop's own (0 on a first forge)
    first = MasterLoop(signature, lambda p, ctx: {"result": 1, "signals": {
        "reliability": 1, "hitRate": 1, "readOnlyFrontier": True}})
    assert first.solve(P1).regime == "frozen"
    # a caller's hitRate overrides the loop's too (reference: Object.assign order)
    low = MasterLoop(signature, forger.forge, signals=lambda p, mid: {
        "reliability": 1, "hitRate": 0.1, "readOnlyFrontier": True, "depth": 0})
    assert [low.solve(P1).regime for _ in range(3)] == ["instance"] * 3


def test_live_stats_equal_the_projection_after_failing_solves() -> None:
    records: list[tuple[str, dict[str, Any]]] = []
    script = iter(["ok", "raise", "malformed", "ok"])

    def forge(problem: Any, ctx: Any) -> Any:
        step = next(script)
        if step == "raise":
            raise RuntimeError("model down")
        if step == "malformed":
            return "not forged"
        return Forged({"method": problem[0], "a": problem[1]["a"]}, 10)

    def re_forge(problem: Any, cand: Any, keys: Any, ctx: Any) -> Any:
        raise RuntimeError("re-forge down")

    cache = MemoryCache()
    loop = MasterLoop(signature, forge, re_forge, cache=cache,
                      sink=lambda k, d: records.append((k, d)))
    assert loop.solve(P1).arm == "forge"
    with pytest.raises(RuntimeError, match="model down"):
        loop.solve(P3)
    with pytest.raises(AuthoringError, match="forge: must return Forged"):
        loop.solve(P3)
    with pytest.raises(RuntimeError, match="re-forge down"):
        loop.solve(P2)  # recalled partially from P1; the re-forge fails
    assert loop.solve(P3).arm == "forge"
    assert loop.solve(P1).arm == "match"
    # 3 solves made it (forge, forge, match); the 3 failures left no trace
    assert loop.stats == MasterLoopStats(match=1, forge=2, cost=20, calls=3)
    state = fold_records(records)
    assert state.stats == loop.stats
    assert dict(state.hits) == loop.hits()
    assert dict(state.cache) == cache.items()
    assert len(cache.items()) == 2 and loop.index.size() == 2


def test_bad_signals_fail_a_solve_before_it_changes_anything() -> None:
    records: list[tuple[str, dict[str, Any]]] = []
    forger = Forger()
    cache = MemoryCache()
    loop = MasterLoop(signature, forger.forge, cache=cache,
                      signals=lambda p, mid: {"hitrate": 1},
                      sink=lambda k, d: records.append((k, d)))
    with pytest.raises(AuthoringError, match=r"signals\(problem\)\.hitrate: unknown signal"):
        loop.solve(P1)
    assert (records, cache.items(), loop.index.size()) == ([], {}, 0)
    assert loop.stats == MasterLoopStats() and loop.hits() == {}
    conflicting = MasterLoop(signature, lambda p, ctx: {"result": 1, "signals": {
        "hitRate": 1, "hit_rate": 0}})
    with pytest.raises(AuthoringError, match=r"forge\.signals\.hitRate: given as hitRate"):
        conflicting.solve(P1)
    assert conflicting.stats == MasterLoopStats()
