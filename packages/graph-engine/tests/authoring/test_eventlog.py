"""The method library and the decompose loop on cladelog's real event log (core's
``cladelog_env``): restarts, replays, atomic batches, the projection."""

from __future__ import annotations

from typing import Any

import pytest
from cladelog.core import Deployment, DeploymentConfig
from cladelog.core.testing import fixed_clock
from cladelog.graph_engine import Engine, Session, replay_session
from cladelog.graph_engine import plugin as real_plugin
from cladelog.graph_engine.authoring import (
    AuthoringError,
    Forged,
    LibraryLog,
    LibraryState,
    MasterLoop,
    MasterLoopStats,
    fold_records,
    library_of,
    library_records,
    library_state,
    loop_concept_tree,
    make_decompose_providers,
    reactive_loop_concept_tree,
    synthesize,
)
from cladelog.graph_engine.authoring.eventlog import (
    EVENT_OF_RECORD,
    LIBRARIES,
    LIBRARY_EVENT_TYPES,
)
from cladelog.graph_engine.authoring.mount import MountThresholds


@pytest.fixture
def cladelog_plugins() -> list[str]:
    return ["graph-engine"]


def test_the_plugin_registers_every_library_event_type() -> None:
    registered = {t.name for t in real_plugin.cladelog_event_types()}
    assert registered >= set(EVENT_OF_RECORD.values())
    assert {t.name for t in LIBRARY_EVENT_TYPES} <= registered
    assert LIBRARIES in real_plugin.cladelog_projections()


P1 = ("sum", {"a": 1})
P2 = ("sum", {"a": 2})
P3 = ("max", {"a": 1})


def signature(problem: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"structure": {"op": problem[0]}, "content": problem[1]}


class Forger:
    """A forge of cost 10 and a partial re-forge of cost 3, counting calls."""

    def __init__(self) -> None:
        self.calls = 0

    def forge(self, problem: Any, ctx: Any) -> Forged:
        self.calls += 1
        return Forged({"method": problem[0], "a": problem[1]["a"]}, 10)

    def re_forge(self, problem: Any, cand: Any, keys: Any, ctx: Any) -> Forged:
        self.calls += 1
        return Forged({**cand.hit.method, "a": problem[1]["a"]}, 3)


def _reopen(env: Any) -> Deployment:
    """A second deployment on the same log file: what a restarted process sees."""
    return Deployment(DeploymentConfig.load(env.config_path), plugins=env.modules,
                      clock=fixed_clock(1000))


SCRIPT: list[tuple[str, Any]] = [
    ("solve", P1), ("solve", P1), ("solve", P2), ("solve", P2), ("solve", P3),
    ("drift", P1), ("solve", P1), ("drift", P1), ("solve", P1), ("solve", P2), ("solve", P3)]
#: the hand-worked arms of SCRIPT with max_deopt = 2 (see test_master_loop)
ARMS = ["forge", "match", "recall-partial", "match", "forge", "drift", "recall-partial",
        "drift", "escalate", "escalate", "match"]


def _play(loop: MasterLoop, steps: list[tuple[str, Any]]) -> list[str]:
    out = []
    for op, problem in steps:
        if op == "solve":
            out.append(loop.solve(problem).arm)
        else:
            loop.drift(problem)
            out.append("drift")
    return out


def test_every_solve_is_one_atomic_batch_of_events(cladelog_env: Any) -> None:
    forger = Forger()
    log = LibraryLog(cladelog_env.deployment, "lib1")
    loop = log.open_loop(signature, forger.forge, forger.re_forge,
                         thresholds=MountThresholds(max_deopt=2))
    assert _play(loop, SCRIPT) == ARMS
    events = cladelog_env.events(stream="graph_library.lib1")
    kinds = [e.type for e in events]
    # 9 solves and 2 drifts; 7 solves decide a mount (escalate does not), 2 drifts deopt
    assert kinds.count("graph_engine.method_solved") == 9
    assert kinds.count("graph_engine.method_drifted") == 2
    assert kinds.count("graph_engine.mount_decided") == 7
    assert kinds.count("graph_engine.mount_deopted") == 2
    assert len(events) == 9 + 2 + 7 + 2 == log.events_written
    # the fixed test clock advances once per append: 11 operations, 11 batches
    assert len({e.recorded_at for e in events}) == 11
    assert events[0].meta["plugin"] == "graph-engine"
    # the projected library is the live one
    state = log.state()
    assert state.stats == loop.stats == MasterLoopStats(
        match=3, recall_full=0, recall_partial=2, forge=2, escalate=2, cost=46, calls=9)
    assert dict(state.cache) == dict(loop.cache.items())  # type: ignore[attr-defined]
    assert dict(state.mounts) == loop.mount.states()
    assert state.hits == loop.hits()
    assert [(dict(s), m) for s, m in state.index] == [(dict(s), m)
                                                      for s, m in loop.index.entries()]


def test_the_library_survives_a_restart(cladelog_env: Any) -> None:
    forger = Forger()
    first = LibraryLog(cladelog_env.deployment, "lib").open_loop(
        signature, forger.forge, forger.re_forge, thresholds=MountThresholds(max_deopt=2))
    assert _play(first, SCRIPT[:6]) == ARMS[:6]  # ... then the process stops
    assert forger.calls == 3
    cladelog_env.deployment.close()
    with _reopen(cladelog_env) as deployment:
        log = LibraryLog(deployment, "lib")
        again = log.open_loop(signature, forger.forge, forger.re_forge,
                              thresholds=MountThresholds(max_deopt=2))
        # the restarted loop continues exactly where the first one stopped
        assert _play(again, SCRIPT[6:]) == ARMS[6:]
        # one re-forge after the drift, two escalations; P3 matched from the log's cache
        assert forger.calls == 3 + 3
        assert again.stats.calls == 9 and again.stats.cost == 46
        assert library_state(deployment, "lib").stats == again.stats


def test_hit_rates_survive_a_restart_so_regimes_do_too(cladelog_env: Any) -> None:
    forger = Forger()
    good = {"reliability": 1.0, "read_only_frontier": True, "depth": 0}
    log = LibraryLog(cladelog_env.deployment, "warm")
    loop = log.open_loop(signature, forger.forge, signals=lambda p, mid: good)
    regimes = [loop.solve(P1).regime for _ in range(4)]
    restarted = LibraryLog(cladelog_env.deployment, "warm").open_loop(
        signature, forger.forge, signals=lambda p, mid: good)
    regimes += [restarted.solve(P1).regime for _ in range(3)]
    # hit rate after n solves = (n−1)/n: 0, .5, .667 (≥ .65 inline), .75, .8, .833,
    # .857 (≥ .85 frozen) — the same sequence as a loop that never stopped
    assert regimes == ["instance", "instance", "inline", "inline", "inline", "inline", "frozen"]
    assert forger.calls == 1


def test_replay_of_the_log_is_the_projection(cladelog_env: Any) -> None:
    forger = Forger()
    with LibraryLog(cladelog_env.deployment, "lib2", flush_every=4) as log:
        loop = log.open_loop(signature, forger.forge, forger.re_forge)
        for problem in (P1, P1, P2, P3, P3, P2):
            loop.solve(problem)
        assert log.events_written > 0  # four solves made a batch; two are still buffered
    result = cladelog_env.replay()
    by_name = {p.name: p for p in result.projections}
    libraries = by_name["graph_engine.libraries"]
    assert set(libraries.state["libraries"]) == {"lib2"}
    projected = library_of(libraries.state["libraries"]["lib2"])
    assert projected == library_state(cladelog_env.deployment, "lib2")
    assert projected.stats == loop.stats
    assert libraries.summary == "1 library, 6 solve(s)"
    # replaying again (incrementally, then from zero) gives the same digest
    assert {p.name: p.digest for p in cladelog_env.replay().projections}[
        "graph_engine.libraries"] == libraries.digest
    rebuilt = {p.name: p.digest for p in cladelog_env.replay(rebuild=True).projections}
    assert rebuilt["graph_engine.libraries"] == libraries.digest
    # the library's events do not show up as graph sessions
    assert by_name["graph_engine.sessions"].state == {"sessions": {}}


def test_a_rejected_append_stops_the_library(cladelog_env: Any) -> None:
    forger = Forger()
    a = LibraryLog(cladelog_env.deployment, "shared")
    b = LibraryLog(cladelog_env.deployment, "shared")
    loop_a = a.open_loop(signature, forger.forge)
    loop_b = b.open_loop(signature, forger.forge)
    loop_a.solve(P1)
    with pytest.raises(AuthoringError, match="library shared: the log refused an append"):
        loop_b.solve(P1)  # b expected the stream at version 0; a moved it on
    with pytest.raises(AuthoringError, match="library shared: the log refused"):
        b.flush()
    # the log holds a's solve only
    assert [k for k, _ in library_records(cladelog_env.deployment, "shared")] == [
        "mount.decided", "master_loop.solved"]


def test_bad_input(cladelog_env: Any) -> None:
    with pytest.raises(AuthoringError, match="library_id: must be 1-150 characters"):
        LibraryLog(cladelog_env.deployment, "../etc")
    with pytest.raises(AuthoringError, match="flush_every: must be a positive integer"):
        LibraryLog(cladelog_env.deployment, "x", flush_every=0)
    log = LibraryLog(cladelog_env.deployment, "x")
    with pytest.raises(AuthoringError, match="record: unknown record type 'bogus'"):
        log.record("bogus", {})
    assert log.state() == LibraryState()  # a new library is empty
    # a record the payload schema refuses is not appended, and stops the library
    with pytest.raises(AuthoringError, match=r"library x: the log refused an append.*"
                                             r"'regime' must be in"):
        log.record("mount.widened", {"id": "m", "regime": "melted", "deoptCount": 0,
                                     "widenCount": 1, "demotedFrom": None})
    assert library_records(cladelog_env.deployment, "x") == []


def test_without_the_event_types_the_log_is_refused(tmp_path: Any) -> None:
    config = DeploymentConfig.from_dict({"store": "log.sqlite3", "plugins": [], "actor": "t"},
                                        path=tmp_path / "cladelog.toml")
    with Deployment(config, create=True) as bare, pytest.raises(
            AuthoringError, match=r"deployment: no enabled plugin registers "
                                  r"graph_engine\.method_solved"):
        LibraryLog(bare, "lib")


def test_records_of_the_log_fold_like_the_in_memory_ones(cladelog_env: Any) -> None:
    forger = Forger()
    memory: list[tuple[str, dict[str, Any]]] = []
    plain = MasterLoop(signature, Forger().forge, Forger().re_forge,
                       sink=lambda k, d: memory.append((k, d)))
    logged = LibraryLog(cladelog_env.deployment, "twin").open_loop(
        signature, forger.forge, forger.re_forge)
    for problem in (P1, P2, P1, P3):
        plain.solve(problem)
        logged.solve(problem)
    plain.drift(P1)
    logged.drift(P1)
    from_log = library_records(cladelog_env.deployment, "twin")
    solved = [d for k, d in from_log if k == "master_loop.solved"]
    assert [d["arm"] for d in solved] == ["forge", "recall-partial", "match", "forge"]
    mine = fold_records(memory)
    theirs = fold_records(from_log)
    assert theirs.cache == mine.cache and theirs.stats == mine.stats
    assert theirs.hits == mine.hits and theirs.index == mine.index


# ----------------------------------------------------------------------------- decompose


class Content:
    """Deterministic content functions, counting every call."""

    SPLIT = {"R": ["A", "B"], "A": ["A1", "A2"]}

    def __init__(self) -> None:
        self.calls = 0

    def eval_fn(self, seg: Any) -> dict[str, bool]:
        self.calls += 1
        return {"atomic": seg.label not in self.SPLIT}

    def expand_fn(self, seg: Any) -> list[str]:
        self.calls += 1
        return self.SPLIT.get(seg.label, [])

    def answer_fn(self, seg: Any) -> str:
        self.calls += 1
        return f"ans({seg.label})"

    def rollup_fn(self, seg: Any, kids: list[Any]) -> str:
        self.calls += 1
        return f"{seg.label}[{','.join(kids)}]"


SEED = {"nodes": [{"_id": "start"}, {"_id": "goal"}],
        "segments": [{"_id": "root", "originNode": "start", "targetNode": "goal", "depth": 0,
                      "label": "R"}]}


def test_a_decompose_run_is_a_session_replayed_without_content_calls(
        cladelog_env: Any) -> None:
    content = Content()
    providers = make_decompose_providers(content.eval_fn, content.expand_fn, content.answer_fn,
                                         content.rollup_fn, max_depth=3)
    session = Session(cladelog_env.deployment, "decompose", reactive_loop_concept_tree(),
                      providers=providers, seed=SEED)
    session.settle()
    live = session.engine
    assert live.get("root")["answer"] == "R[A[ans(A1),ans(A2)],ans(B)]"  # type: ignore[index]
    # eval on 5 segments, expand on R and A, answer on 3 leaves, rollup on R and A:
    # 5 + 2 + 3 + 2 = 12
    assert content.calls == 12
    replayed = replay_session(cladelog_env.deployment, "decompose", providers=providers)
    assert content.calls == 12 and replayed.provider_calls == {}
    assert replayed.facts() == live.facts()
    assert replayed.cast_state() == live.cast_state()


def test_synthesize_on_a_session_writes_the_answers_to_the_log(cladelog_env: Any) -> None:
    content = Content()
    providers = make_decompose_providers(content.eval_fn, content.expand_fn, content.answer_fn,
                                         max_depth=3)
    session = Session(cladelog_env.deployment, "post", loop_concept_tree(),
                      providers=providers, seed=SEED)
    session.settle()
    assert synthesize(session, "root", content.rollup_fn) == "R[A[ans(A1),ans(A2)],ans(B)]"
    calls = content.calls
    replayed = replay_session(cladelog_env.deployment, "post")
    assert content.calls == calls
    root = replayed.get("root")
    assert root is not None and root["Synthesized"] is True
    assert root["answer"] == "R[A[ans(A1),ans(A2)],ans(B)]"
    assert replayed.facts() == session.engine.facts()
    with pytest.raises(AuthoringError, match="engine: must be an Engine or a Session"):
        synthesize("root", "root")  # type: ignore[arg-type]
    assert isinstance(replayed, Engine)
