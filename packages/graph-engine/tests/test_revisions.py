"""Revisions, diffs, rollback and forks (SPEC §1.13), live and replayed."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from cladelog.graph_engine import (
    Engine,
    EngineConfig,
    GraphEngineError,
    ProviderCall,
    Session,
    replay_session,
    session_records,
)
from ge_helpers import Calls, concept, free, tree


def doubling() -> tuple[dict[str, Any], Calls]:
    calls = Calls()
    calls.add("P::a", lambda c: {"$$_id": c.object_id, "A": True, "a": c.facts["x"] * 2})
    return tree(concept("A", require=["x"], provider="P::a")), calls


def boot(records: list[Any] | None = None, **config: Any) -> tuple[Engine, Calls]:
    t, calls = doubling()
    sink = (lambda k, d: records.append((k, d))) if records is not None else None
    eng = Engine(t, providers=calls.providers, seed={"freeNodes": [{"_id": "o", "x": 1}]},
                 config=EngineConfig(**config), sink=sink)
    eng.settle()
    return eng, calls


def test_snapshots_and_diff() -> None:
    eng, _ = boot()
    r1 = eng.revision
    eng.mutate({"$$_id": "o", "x": 5})
    eng.mutate({"$$_id": "n", "y": 1})
    eng.settle()
    r2 = eng.revision
    assert eng.revisions() == [r1, r2]
    # cast-once: A does not re-derive when x changes, so only x differs on o
    assert eng.diff_revisions(r1, r2) == {"added": ["n"], "removed": [],
                                          "changed": {"o": {"x": [1, 5]}}}
    assert eng.diff_revisions(r2, r1)["removed"] == ["n"]
    assert eng.snapshot(r1)["o"]["a"] == 2 and eng.snapshot(r1)["o"]["x"] == 1


def test_rollback_restores_facts_and_keeps_counting() -> None:
    eng, calls = boot()
    r1 = eng.revision
    digest_r1 = eng.digest()
    eng.mutate({"$$_id": "o", "x": 5})
    eng.mutate({"$$_id": "n", "x": 3})
    eng.settle()
    r2 = eng.revision
    assert calls.count == {"P::a": 2}  # o at boot, n after the mutation
    eng.rollback_to(r1)
    eng.settle()
    assert eng.digest() == digest_r1 and eng.get("n") is None
    assert calls.count == {"P::a": 2}  # the restored flag counts as cast: nothing re-runs
    # later snapshots are dropped (linear undo); the restored state settles as a new revision
    assert eng.revisions() == [r1, r2 + 1]
    eng.mutate({"$$_id": "o", "x": 7})
    eng.settle()
    assert eng.revision > r2 + 1  # revision numbers are never reused


def test_rollback_from_a_provider_is_deferred_to_the_boundary() -> None:
    calls = Calls()
    first: list[int] = []

    def undo(call: Any) -> Any:
        call.engine.rollback_to(first[0])
        call.engine.rollback_to(first[0])  # several collapse to the earliest
        return {"$$_id": call.object_id, "Undo": True}

    calls.add("P::undo", undo)
    eng = Engine(tree(concept("Undo", require=["undo"], provider="P::undo")),
                 providers=calls.providers, seed={"freeNodes": [{"_id": "o", "x": 1}]})
    eng.settle()
    first.append(eng.revision)
    before = eng.digest()
    eng.mutate({"$$_id": "o", "undo": True})
    eng.settle()
    assert calls.count == {"P::undo": 1}
    assert eng.digest() == before and "undo" not in (eng.get("o") or {})


def test_rollback_errors_and_limits() -> None:
    eng, _ = boot(max_revisions=2)
    for x in (2, 3, 4):
        eng.mutate({"$$_id": "o", "x": x})
        eng.settle()
    assert len(eng.revisions()) == 2
    with pytest.raises(GraphEngineError, match=r"rollback_to\.revision: no snapshot"):
        eng.rollback_to(10_000)
    with pytest.raises(GraphEngineError, match=r"diff_revisions\.revision"):
        eng.diff_revisions(-1, eng.revision)


def test_rollback_replays_from_records() -> None:
    records: list[Any] = []
    eng, _ = boot(records)
    r1 = eng.revision
    eng.mutate({"$$_id": "o", "x": 9})
    eng.mutate({"$$_id": "p", "x": 2})
    eng.settle()
    eng.rollback_to(r1)
    eng.mutate({"$$_id": "q", "x": 4})
    eng.settle()
    assert any(k == "rolled_back" for k, _ in records)
    again = Engine.replay(records)
    assert again.digest() == eng.digest() and again.cast_state() == eng.cast_state()
    assert again.get("q")["a"] == 8 and again.get("p") is None  # 4 * 2; p was undone


def test_fork_reintegrates_into_the_parent() -> None:
    parent, _ = boot()
    child = parent.fork(reintegrate_into="o")
    assert child.get("o") == {k: v for k, v in parent.get("o").items() if k != "_rev"}
    child.mutate({"$$_id": "c", "x": 10})
    child.settle()
    parent.settle()
    result = parent.get("o")["forkResult"]
    assert result["c"]["a"] == 20 and result["o"]["a"] == 2  # the child derived c: 10 * 2
    with pytest.raises(GraphEngineError, match="destroyed"):
        child.settle()
    with pytest.raises(GraphEngineError, match="reintegrate_into"):
        parent.fork(reintegrate_into="nope")


def test_fork_with_projection_and_plain_fork() -> None:
    parent, _ = boot()
    child = parent.fork(seed={"freeNodes": [{"_id": "z", "x": 3}]}, reintegrate_into="o",
                        project=lambda ch: {"$$_id": "o", "best": ch.get("z")["a"]})
    child.settle()
    parent.settle()
    assert parent.get("o")["best"] == 6  # 3 * 2
    free = parent.fork()
    free.settle()
    free.settle()  # no reintegration: an ordinary engine
    assert free.get("o")["a"] == 2


@pytest.fixture
def cladelog_plugins() -> list[str]:
    return ["graph-engine"]


#: One event per record, and the default (records packed): a rollback replays in both.
LAYOUTS = pytest.mark.parametrize("cladelog_settings", [{"graph-engine": {"pack_records": 0}},
                                                        {}], ids=["per-record", "packed"])


@LAYOUTS
def test_rollback_in_a_recorded_session(cladelog_env: Any) -> None:
    t, calls = doubling()
    session = Session(cladelog_env.deployment, "rb", t, providers=calls.providers,
                      seed={"freeNodes": [{"_id": "o", "x": 1}]})
    session.settle()
    r1 = session.engine.revision
    session.engine.mutate({"$$_id": "p", "x": 5})
    session.settle()
    session.engine.rollback_to(r1)
    session.settle()
    kinds = [k for k, _ in session_records(cladelog_env.deployment, "rb")]
    assert kinds.count("rolled_back") == 1 and kinds.count("settled") == 3
    replayed = replay_session(cladelog_env.deployment, "rb")
    assert replayed.digest() == session.engine.digest() and replayed.get("p") is None


def test_a_rollback_behind_a_checkpoint_still_replays() -> None:
    records: list[Any] = []
    eng, _ = boot(records)
    r1 = eng.revision
    eng.mutate({"$$_id": "p", "x": 2})
    eng.settle()
    eng.write_checkpoint()  # taken after r1: a replay from it has no snapshot of r1
    eng.rollback_to(r1)
    eng.settle()
    again = Engine.replay(records, from_checkpoint=True)
    assert again.digest() == eng.digest() and again.get("p") is None


class TestSessionCheckpointRollback:
    @pytest.fixture(params=[0, 1000], ids=["per-record", "packed"])
    def cladelog_settings(self, request: pytest.FixtureRequest) -> dict[str, dict[str, Any]]:
        # checkpoints only by hand here
        return {"graph-engine": {"checkpoint_every": 0, "pack_records": request.param}}

    def test_replay_session_falls_back_to_the_full_stream(self, cladelog_env: Any) -> None:
        t, calls = doubling()
        session = Session(cladelog_env.deployment, "cb", t, providers=calls.providers,
                          seed={"freeNodes": [{"_id": "o", "x": 1}]})
        session.settle()
        r1 = session.engine.revision
        session.engine.mutate({"$$_id": "p", "x": 5})
        session.settle()
        session.engine.write_checkpoint()
        session.flush()
        session.engine.rollback_to(r1)  # reaches behind the checkpoint
        session.settle()
        kinds = [k for k, _ in session_records(cladelog_env.deployment, "cb")]
        assert kinds.index("checkpoint") < kinds.index("rolled_back")
        assert session_records(cladelog_env.deployment, "cb", from_checkpoint=True)[0][0] == (
            "checkpoint")  # the replay starts there, then finds it must start over
        replayed = replay_session(cladelog_env.deployment, "cb")
        assert replayed.digest() == session.engine.digest() and replayed.get("p") is None


def test_an_async_provider_sees_writes_made_while_it_runs_after_a_snapshot() -> None:
    """A settle snapshot shares each object's facts until its next write. A provider's
    view of the facts still follows the object's writes: here, after a settle, an async
    provider on x awaits while a sync one on z writes x's ``w``, and the async one then
    reads it (a view of the facts the snapshot holds would still say nothing)."""
    calls = Calls()
    seen: list[Any] = []

    async def slow(call: ProviderCall) -> Any:
        for _ in range(3):
            await asyncio.sleep(0)
        seen.append(call.facts.get("w"))
        return {"$$_id": call.object_id, "A": True}

    calls.add("P::slow", slow)
    calls.add("P::fast", lambda c: [{"$$_id": "x", "w": 2}, {"$$_id": c.object_id, "B": True}])
    t = tree(concept("A", require=["peer:go", "role"], provider="P::slow"),
             concept("B", require=["peer:go", "writer"], provider="P::fast"))
    eng = Engine(t, providers=calls.providers,
                 seed=free({"_id": "x", "peer": "y", "role": 1},
                           {"_id": "z", "peer": "y", "writer": 1}, {"_id": "y"}))
    asyncio.run(eng.asettle())
    assert eng._objects["x"].shared  # the snapshot holds x's facts
    eng.mutate({"$$_id": "y", "go": True})  # wakes A on x and B on z; x is not written
    asyncio.run(eng.asettle())
    assert seen == [2]
    assert eng.facts()["x"]["A"] is True and eng.facts()["x"]["w"] == 2
