"""The streaming replay fold (``replay.py``) against the live engine and the general path.

Random sessions (``ge_random.py``) exercise what the fold treats specially. The known values
always come from the live engine; the general path (``replay.replay_general``) is compared
too, since the fold hands it whatever it cannot vouch for.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from cladelog.core.canonical import canonical_bytes
from cladelog.graph_engine import (
    Engine,
    ReplayError,
    Session,
    SessionError,
    replay_session,
    session_records,
    sessions,
)
from cladelog.graph_engine import replay as fold
from cladelog.graph_engine.engine import ReplayPort, _gc_paused
from cladelog.graph_engine.events import (
    PACKED_SCHEMA_VERSION,
    pack_records,
    packed_columns,
    unpack_records,
)
from cladelog.graph_engine.jsvalue import UNDEFINED, js_same
from cladelog.graph_engine.replay import Unfoldable
from ge_helpers import concept, tree
from ge_random import Records, providers, random_session, record_session, session_tree, state


def chunked(records: Records, rng: random.Random) -> list[list[Any]]:
    """The records through a JSON round trip, cut into chunks of random sizes (a mutation
    and its effects often straddle two chunks)."""
    items = json.loads(json.dumps(records))
    out: list[list[Any]] = []
    while items:
        n = rng.randrange(1, 8)
        out.append(items[:n])
        items = items[n:]
    return out


def fold_records(chunks: Any, **kw: Any) -> Engine:
    """The fold of ``chunks`` into a new engine (no fallback to the general path)."""
    engine: Engine = fold.fold_records(chunks, ReplayPort, **kw)
    return engine


def general(records: Any) -> Engine:
    """The general replay path, which the fold must agree with."""
    with _gc_paused():
        engine: Engine = fold.replay_general(records, ReplayPort)
        return engine


@pytest.mark.parametrize("seed", range(60))
def test_fold_matches_live_and_general_path(seed: int) -> None:
    live, records, calls = random_session(seed)
    before = dict(calls.count)
    folded = fold_records(chunked(records, random.Random(seed)))  # never falls back here
    assert calls.count == before  # no provider call
    expected = state(live)
    assert state(folded) == expected
    slow = general(json.loads(json.dumps(records)))
    assert state(slow) == expected
    for oid in slow.object_ids():
        assert folded.open_concepts(oid) == slow.open_concepts(oid)


@pytest.mark.parametrize("seed", range(0, 60, 7))
def test_folded_engine_goes_on_like_the_live_one(seed: int) -> None:
    live, records, calls = random_session(seed)
    folded = fold_records([json.loads(json.dumps(records))], providers=calls.providers)
    rng = random.Random(seed + 1000)
    for eng in (live, folded):
        eng.mutate({"$$_id": "o1", "v": 2, "tags": {"__push": 9}})
        eng.mutate({"$$_id": "n2", "link": True})
        eng.settle()
    assert state(folded) == state(live)
    kept = live.revisions()
    target = rng.choice(kept)
    for eng in (live, folded):
        eng.rollback_to(target)
        eng.settle()
    assert state(folded) == state(live)


def packed(records: Records, rng: random.Random) -> list[Any]:
    """The records as the columns of packed events of random sizes (what a session replay
    folds), through a JSON round trip; a mutation's casts may straddle two packs."""
    out: list[Any] = []
    for chunk in chunked(records, rng):
        data = json.loads(json.dumps(pack_records([(k, d) for k, d in chunk])))
        assert unpack_records(data) == [(k, d) for k, d in chunk]  # the same records
        out.append(packed_columns(data))
    return out


@pytest.mark.parametrize("seed", range(60))
def test_fold_of_packed_columns_matches_live(seed: int) -> None:
    live, records, calls = random_session(seed)
    before = dict(calls.count)
    folded = fold_records(packed(records, random.Random(seed)))  # never falls back here
    assert calls.count == before
    assert state(folded) == state(live)


@pytest.mark.parametrize("seed", range(60))
def test_snapshots_keep_what_their_settle_saw(seed: int) -> None:
    """A settle snapshot shares each object's facts until the object's next write, which
    copies them (GraphObject.shared): whatever comes after (writes, retractions, uncasts,
    rollbacks, forks) leaves every kept snapshot as its settle left it, live and in every
    replay path."""
    seen: dict[int, Any] = {}
    live, records, _ = random_session(seed, seen)
    rng = random.Random(seed)
    replays = [live, general(json.loads(json.dumps(records))),
               fold_records(chunked(records, rng)), fold_records(packed(records, rng))]
    for eng in replays:
        kept = eng.revisions()
        assert kept and set(kept) <= set(seen)
        for revision in kept:
            assert eng.snapshot(revision) == seen[revision], revision
    # and going on from a replay: a write after the last settle leaves its snapshot alone
    last = live.revisions()[-1]
    for eng in replays:
        for oid in eng.object_ids():
            eng.mutate({"$$_id": oid, "v": "changed", "w": "changed"})
        assert eng.snapshot(last) == seen[last]
        eng.settle()
        assert eng.snapshot(last) == seen[last]


def test_every_write_path_copies_facts_a_snapshot_holds() -> None:
    """Each write path on its own, on an object whose facts the last snapshot holds (the
    sessions above write ``_rev`` first, which copies them before these paths run)."""
    live, _, _ = random_session(3)
    oid = live.object_ids()[0]

    def context() -> tuple[Any, ...]:
        return (live._objects, live._index, None, None, live._relink, js_same, UNDEFINED)

    writes = [lambda obj: live._write(obj, "k1", 1),
              lambda obj: live._silent_delete(obj, "k1"),
              lambda obj: fold._write_all(live._index, live._relink, obj, obj.id, [("k2", 2)]),
              lambda obj: fold.write_pairs(context(), obj, obj.id, {"k3": 3})]
    for write in writes:
        live.settle()
        revision = live.revisions()[-1]
        before = live.snapshot(revision)
        obj = live._objects[oid]
        assert obj.shared  # the snapshot holds its facts
        write(obj)
        assert not obj.shared
        assert live.snapshot(revision) == before
    facts = live.facts()[oid]
    assert "k1" not in facts and facts["k2"] == 2 and facts["k3"] == 3


def test_a_cast_after_the_window_of_its_columnar_mutation() -> None:
    # never written by a packer: a whole record between a columnar mutation and its cast.
    # The general path places the cast by (revision, write); the fold hands it over.
    failed = ("run_failed", {"step": 0, "op": "mutate", "message": "no"})
    records = [*_boot(), _mutation(1, "o", ["v", 1]),
               ("cast", {"object": "o", "concept": "A", "at": [1, 1]}), failed]
    data = pack_records(records)
    columns = data["columns"]
    assert (columns["order"], columns["shape"]) == ("oomo", [[["v"], [["A", 1]]]])
    # the run_failed among the mutation's casts: tree, seed, mutation, run_failed, cast
    columns["order"], columns["shape"] = "oom", [[["v"], [None, ["A", 1]]]]
    assert unpack_records(data)[3:] == [failed, records[3]]
    with pytest.raises(Unfoldable):
        fold_records([packed_columns(data)])
    assert general(unpack_records(data)).cast_state() == {"o": ["A"]}


def test_a_provider_error_among_the_casts_of_a_columnar_mutation() -> None:
    # the shape's follow holds the provider error (a null) between the two casts; the fold
    # applies the mutation with its casts and passes over the error, as the general path does
    error = ("provider_error", {"object": "o", "concept": "B", "provider": "P::b",
                                "role": "provider", "apply": "a1", "message": "boom"})
    records = [*_boot(), _mutation(1, "o", ["v", 1], ["w", 2]),
               ("cast", {"object": "o", "concept": "A", "at": [1, 1]}), error,
               ("cast", {"object": "o", "concept": "B", "at": [1, 2]}), error,
               _mutation(2, "p", ["v", 3]),
               ("cast", {"object": "p", "concept": "A", "at": [2, 1]})]
    data = json.loads(json.dumps(pack_records(records)))
    columns = data["columns"]
    # the error after the last cast is a letter of its own; the last mutation, whose casts
    # might go on in the next pack, stays whole with its cast
    assert (columns["order"], columns["s"]) == ("oomooo", [0])
    assert columns["shape"] == [[["v", "w"], [["A", 1], None, ["B", 2]]]]
    assert unpack_records(data) == [(k, json.loads(json.dumps(d))) for k, d in records]
    folded = fold_records([packed_columns(data)])
    assert state(folded) == state(general(records))
    assert folded.cast_state() == {"o": ["A", "B"], "p": ["A"]}


def test_a_stretch_of_one_shape_writes_as_a_mutation_at_a_time() -> None:
    # one shape ([v, w], a cast of A after its first write) for six mutations, applied a
    # key at a time by apply_run: the same object twice (its second writes: 1.0 to a v of
    # 1 is an identical write, SPEC §0-16, so v stays the int 1; w changes), an object
    # made by its mutation, one that had w from the seed (an identical write, then not)
    boot = _boot()
    boot[1][1]["freeNodes"].append({"_id": "q", "w": 5})
    writes = [("o", 1, 2), ("p", 3, 4), ("o", 1.0, 6), ("n", 7, 8), ("q", 9, 5), ("q", 9, 10)]
    records = list(boot)
    for rev, (oid, v, w) in enumerate(writes, 1):
        records += [_mutation(rev, oid, ["v", v], ["w", w]),
                    ("cast", {"object": oid, "concept": "A", "at": [rev, 1]})]
    records.append(("run_failed", {"step": 0, "op": "mutate", "message": "no"}))  # so that
    # the last mutation is columnar too (a pack's last one stays whole)
    data = json.loads(json.dumps(pack_records(records)))
    columns = data["columns"]
    assert (columns["order"], columns["s"]) == ("oo" + "m" * 6 + "o", [0] * 6)
    folded = fold_records([packed_columns(data)])
    slow = general(records)
    assert state(folded) == state(slow)
    facts = folded.facts()
    assert facts["o"] == {"_id": "o", "_rev": 3, "v": 1, "w": 6}
    held = folded._objects["o"].facts["v"]  # facts() would copy 1.0 as 1
    assert held == 1 and type(held) is int and type(slow._objects["o"].facts["v"]) is int
    assert facts["q"] == {"_id": "q", "w": 10, "_rev": 6, "v": 9}
    assert facts["n"] == {"_id": "n", "_rev": 4, "v": 7, "w": 8}
    for oid in ("o", "p", "q", "n"):  # each object's keys in the order they were written
        assert list(facts[oid]) == list(slow.facts()[oid])
    assert folded.select(["v"]) == ["o", "p", "n", "q"]  # the index in first-write order
    assert folded.select(["w"]) == ["q", "o", "p", "n"]
    assert folded.cast_state() == {oid: ["A"] for oid in ("o", "p", "n", "q")}


def test_replay_uses_the_fold_and_agrees_with_the_general_path() -> None:
    live, records, _ = random_session(3)
    assert state(Engine.replay(records)) == state(general(records)) == state(live)


def _mutation(rev: int, oid: str, *pairs: list[Any]) -> tuple[str, dict[str, Any]]:
    return ("mutation_applied", {"rev": rev, "target": oid, "cause": {"kind": "host"},
                                 "items": [{"id": oid, "create": None, "set": list(pairs)}]})


def _boot() -> Records:
    t = tree(concept("A", require=["v"]), concept("B", require=["w"]))
    return [("tree_loaded", {"tree": t, "config": {}}),
            ("seeded", {"freeNodes": [{"_id": "o"}, {"_id": "p"}], "nodes": [],
                        "segments": []})]


def test_effects_a_live_engine_never_records_go_through_the_engine() -> None:
    # a cast on another object than its write's, and an effect filed before its mutation:
    # the general path places them by (revision, write); the fold agrees or hands over
    odd = [*_boot(),
           _mutation(1, "o", ["v", 1], ["w", 2]),
           ("cast", {"object": "p", "concept": "A", "at": [1, 1]}),
           ("uncast", {"object": "o", "concept": "A", "permanent": False, "at": [1, 2]}),
           ("cast", {"object": "o", "concept": "B", "at": [2, 1]}),
           _mutation(2, "o", ["w", 3])]
    assert state(Engine.replay(odd)) == state(general(odd))
    chunks = [odd[:3], odd[3:5], odd[5:]]
    with pytest.raises(Unfoldable):
        fold_records(chunks)  # the effect of revision 2 comes before its mutation
    assert Engine.replay(odd).cast_state() == {"o": ["B"], "p": ["A"]}


def test_an_uncast_among_the_writes_of_its_mutation() -> None:
    # the uncast deletes the flag written at write 1; write 2 writes it again: applied in
    # place (as the general path does) the second value stays
    records = [*_boot(),
               _mutation(1, "o", ["A", True], ["v", 1]),
               ("cast", {"object": "o", "concept": "A", "at": [1, 1]}),
               _mutation(2, "o", ["A", None], ["A", 5]),
               ("uncast", {"object": "o", "concept": "A", "permanent": False, "at": [2, 1]})]
    folded = fold_records([records[:4], records[4:]])
    assert folded.get("o") == general(records).get("o") == {"_id": "o", "_rev": 2, "A": 5,
                                                             "v": 1}
    assert folded.cast_state() == general(records).cast_state()


@pytest.mark.parametrize("bad, message", [
    ([("cast", {"object": "o", "concept": "A", "at": [9, 1]})],
     "1 effects point at no mutation write"),
    ([_mutation(1, "o", ["v", 1]), ("cast", {"object": "o", "concept": "A", "at": [1, 2]})],
     "1 effects point at no mutation write"),
    ([_mutation(1, "o", ["v", 1]), ("cast", {"object": "o", "concept": "Z", "at": [1, 1]})],
     "unknown object or concept"),
    ([("settled", {"revision": 0, "passes": 1, "applies": 0, "created": 0, "capped": None,
                   "digest": "0" * 64, "castDigest": "0" * 64})],
     "facts digest differs from the recording"),
    ([("nonsense", {})], "unknown record type 'nonsense'"),
    ([("provider_error", [])], "data must be an object"),
    ([_mutation(1, "o", ["v", 1]), ("cast", {"object": "o", "concept": "A", "at": 5})],
     "must be \\[rev, write\\]"),
    ([("mutation_applied", {"rev": 1})], "malformed record"),
])
def test_malformed_records_fail_as_on_the_general_path(bad: Records, message: str) -> None:
    records = [*_boot(), *bad]
    with pytest.raises(Unfoldable):
        fold_records([records])
    with pytest.raises(ReplayError, match=message) as fast:
        Engine.replay(records)
    with pytest.raises(ReplayError) as slow:
        general(records)
    assert str(fast.value) == str(slow.value)


@pytest.fixture
def cladelog_plugins() -> list[str]:
    return ["graph-engine"]


@pytest.fixture(params=[{}, {"pack_records": 3, "checkpoint_every": 10},
                        {"pack_records": 1000, "flush_every": 7}])
def cladelog_settings(request: pytest.FixtureRequest) -> dict[str, dict[str, Any]]:
    return {"graph-engine": request.param}


def test_session_replay_from_the_first_event(cladelog_env: Any,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    dep = cladelog_env.deployment
    s, calls = record_session(dep, "s", 7)
    before = dict(calls.count)
    decoded: list[Any] = []
    original = sessions.packed_replay_data

    def decode(stored: bytes) -> Any:  # what the read hands the fold for a packed event
        decoded.append(original(stored))
        return decoded[-1]

    unread: list[bytes] = []
    with monkeypatch.context() as m:  # the fold replays it all: no fallback
        m.setattr(fold, "replay_general", None)
        m.setattr(sessions, "packed_replay_data", decode)
        m.setattr(sessions, "_unread", unread.append)
        replayed = replay_session(dep, "s", from_checkpoint=False)
    assert calls.count == before
    # the key index holds each object's own id, not one parsed copy per mutation
    objects = replayed._objects
    assert all(oid is objects[oid].id for bucket in replayed._index.values() for oid in bucket)
    # every packed event the read passes (from the session's first event to its last,
    # another session's too) is read without its audit
    ours = [e.position for e in dep.store.read(stream="graph.s")]
    packed = [e for e in dep.store.read(ours[0], ours[-1])
              if e.type == "graph_engine.records_packed"]
    assert packed and decoded == [{k: v for k, v in e.data.items() if k != "audit"}
                                  for e in packed]
    # and the checkpoints it passes (checkpoint_every = 10 writes some) are not parsed:
    # their stored bytes go unread
    checkpoints = [e for e in dep.store.read(ours[0], ours[-1])
                   if e.type == "graph_engine.checkpoint"]
    assert unread == [canonical_bytes(e.data) for e in checkpoints]
    assert state(replayed) == state(s.engine)
    assert state(general(session_records(dep, "s"))) == state(s.engine)
    other = replay_session(dep, "s-other", from_checkpoint=False)
    assert other.digest() == replay_session(dep, "s-other").digest()


def test_session_errors_are_worded_by_the_general_path(cladelog_env: Any) -> None:
    from cladelog.core import NewEvent

    dep = cladelog_env.deployment
    with pytest.raises(SessionError, match="no session 'nope'"):
        replay_session(dep, "nope", from_checkpoint=False)
    s = Session(dep, "s", session_tree(), providers=providers().providers,
                seed={"freeNodes": [{"_id": "o", "w": 1}]})
    s.settle()
    dep.append([NewEvent("graph.s", "graph_engine.records_packed",
                         {**pack_records([]), "count": 2})])
    with pytest.raises(SessionError, match="not a list of the announced count"):
        replay_session(dep, "s", from_checkpoint=False)


LOGS = Path(__file__).parent / "fixtures" / "logs"


def test_a_log_in_the_first_packed_format_replays_the_same(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``packed_v1.log.jsonl``: a session recorded by the version 1 writer (records as one
    JSON text per packed event; ``ge_random.record_session(dep, "old", 11)`` with
    ``pack_records`` 5 and ``checkpoint_every`` 40), exported with its hashes. The expected
    state is the live engine's of that run."""
    from cladelog.core import Deployment, DeploymentConfig
    from cladelog.core.canonical import canonical_digest
    from cladelog.core.store.base import event_from_json

    expected = json.loads((LOGS / "packed_v1.expected.json").read_text())
    lines = (LOGS / "packed_v1.log.jsonl").read_text().splitlines()

    def deployment(name: str) -> Any:
        settings = {"graph-engine": {"pack_records": 5, "checkpoint_every": 40}}
        cfg = DeploymentConfig.from_dict({"store": "log.sqlite3", "actor": "fixture",
                                          "plugins": ["graph-engine"], "settings": settings},
                                         path=tmp_path / name / "cladelog.toml")
        return Deployment(cfg, create=True)

    with deployment("old") as old:
        old.import_events(event_from_json(json.loads(line)) for line in lines)
        versions = {e.schema_version for e in old.store.read(stream="graph.old")
                    if e.type == "graph_engine.records_packed"}
        assert versions == {1}
        with monkeypatch.context() as m:  # the fold replays it all: no fallback
            m.setattr(fold, "replay_general", None)
            replayed = replay_session(old, "old", from_checkpoint=False)
        assert json.loads(json.dumps(state(replayed))) == expected["state"]
        replayed = replay_session(old, "old")  # from its last checkpoint
        assert json.loads(json.dumps(state(replayed))) == expected["state"]
        records = session_records(old, "old")
        assert canonical_digest([list(r) for r in records]) == expected["records_digest"]
        assert old.state("graph_engine.sessions")["sessions"]["old"]["records"] == len(records)
    # the same session recorded now: events of the current version, the very same records
    with deployment("new") as new:
        live, _ = record_session(new, "old", 11)
        assert json.loads(json.dumps(state(live.engine))) == expected["state"]
        assert session_records(new, "old") == records
        assert {e.schema_version for e in new.store.read(stream="graph.old")
                if e.type == "graph_engine.records_packed"} == {PACKED_SCHEMA_VERSION}
        with monkeypatch.context() as m:
            m.setattr(fold, "replay_general", None)
            again = replay_session(new, "old", from_checkpoint=False)
        assert json.loads(json.dumps(state(again))) == expected["state"]
