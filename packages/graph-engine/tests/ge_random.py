"""Random graph sessions for the replay tests (``test_fold.py``): the live engine gives the
known values a replay must reproduce.

A session exercises what a replay treats specially: mutations with ``{__push}``, flags
written null (an ``uncast`` inside a mutation, with its cascade and cleaner), host
cast/uncast, segments re-linked, concepts added, patched and deleted, provider errors
(``divergent`` facts), several settles, rollbacks and forks. Only the public API is used,
so older versions of the engine can record the same sessions (the old-format log fixture).
"""

from __future__ import annotations

import random
from typing import Any

from cladelog.graph_engine import Engine, EngineConfig, GraphEngineError, Session
from ge_helpers import Calls, concept, tree

Records = list[tuple[str, dict[str, Any]]]
NODES = ("n0", "n1", "n2")
OBJECTS = ("o0", "o1", "o2", "o3")


def providers() -> Calls:
    calls = Calls()

    def a(call: Any) -> Any:
        v = call.facts["v"]
        if v == 3:
            raise RuntimeError("three")  # a provider error: the object gets ``divergent``
        return {"$$_id": call.object_id, "A": True, "a": v * 2, "hist": {"__push": v}}

    def link(call: Any) -> Any:
        oid = call.object_id
        target = NODES[(NODES.index(oid) + 1) % len(NODES)]
        return [{"$$_id": oid, "L": True},
                {"_id": f"seg-{oid}", "Segment": True, "originNode": oid,
                 "targetNode": target}]

    calls.add("P::a", a)
    calls.emit("P::clean", cleaned={"__push": 1})
    calls.add("P::link", link)
    calls.add("P::kid", lambda c: [{"$$_id": c.object_id, "K": True},
                                   {"_id": f"kid-{c.object_id}", "Node": True}])
    return calls


def session_tree() -> dict[str, Any]:
    return tree(
        concept("A", require=["v"], ensure=["$v > 0"], provider="P::a", cleaner="P::clean",
                children=[concept("B", defaultValue="b",
                                  children=[concept("B2", require=["B"],
                                                    defaultValue=2)])]),
        concept("F", require=["v"], follow=["v"],
                applyMutations={"$_id": "_parent", "seen": {"__push": 1}}),
        concept("L", require=["Node", "link"], provider="P::link"),
        concept("K", require=["kid"], provider="P::kid"),
        concept("W", require=["w"]),
    )


def random_op(rng: random.Random, eng: Engine, deleted: set[str]) -> None:
    """One random host operation on the live engine (may be refused: then nothing)."""
    oid = rng.choice(OBJECTS)
    node = rng.choice(NODES)
    roll = rng.randrange(13)
    try:
        if roll == 0:
            eng.mutate({"$$_id": oid, "v": rng.choice([-1, 0, 1, 2, 3, 4, None])})
        elif roll == 1:
            eng.mutate({"$$_id": oid, "A": None})  # retracts A inside the mutation
        elif roll == 2:
            eng.mutate({"$$_id": oid, "tags": {"__push": rng.randrange(3)},
                        "w": rng.choice([1, None, "x"])})
        elif roll == 3:
            eng.mutate({"$$_id": node, "link": rng.choice([True, None])})
        elif roll == 4:
            seg = rng.choice([f"seg-{n}" for n in NODES] + ["s0"])
            eng.mutate({"$$_id": seg, rng.choice(["originNode", "targetNode"]):
                        rng.choice([*NODES, None, "ghost"])})
        elif roll == 5:
            eng.cast(oid, rng.choice(["A", "W", "F"]))
        elif roll == 6:
            eng.uncast(oid, rng.choice(["A", "W", "B"]))
        elif roll == 7:
            name = f"X{rng.randrange(100)}"
            eng.add_concept(rng.choice([None, "A"]), {"_id": name, "require": ["w"],
                                                      "defaultValue": 1})
        elif roll == 8:
            eng.patch_concept("W", {"require": [rng.choice(["w", "v", "tags"])]})
        elif roll == 9 and not deleted:
            victim = rng.choice(["F", "K", "B"])
            deleted.add(victim)
            eng.delete_concept(victim)
        elif roll == 10:
            kept = eng.revisions()
            if kept:
                eng.rollback_to(rng.choice(kept))
        elif roll == 11:
            eng.mutate({"$$_id": node, "kid": rng.randrange(2), "v": rng.choice([1, 2, 3])})
        else:
            child = eng.fork(reintegrate_into=oid)
            child.mutate({"$$_id": oid, "forked": rng.randrange(5)})
            child.settle()  # the merge lands in ``eng`` as a mutation with cause ``fork``
    except GraphEngineError:
        pass


def random_session(seed: int, seen: dict[int, Any] | None = None
                   ) -> tuple[Engine, Records, Calls]:
    """A live engine after a random session, its records and its providers; ``seen`` gets
    the facts each settle's snapshot holds, as that settle leaves them."""
    rng = random.Random(seed)
    calls = providers()
    records: Records = []
    start = {"nodes": [{"_id": n, "link": rng.choice([True, None])} for n in NODES],
             "segments": [{"_id": "s0", "originNode": "n0", "targetNode": "n1"}],
             "freeNodes": [{"_id": o, "v": rng.choice([1, 2, 3])} for o in OBJECTS]}
    eng = Engine(session_tree(), providers=calls.providers, seed=start,
                 config=EngineConfig(max_revisions=rng.choice([2, 64])),
                 sink=lambda k, d: records.append((k, d)))
    deleted: set[str] = set()

    def settle() -> None:
        eng.settle()
        if seen is not None:
            seen[eng.revision] = eng.snapshot(eng.revision)

    for _ in range(rng.randrange(2, 7)):
        settle()
        for _ in range(rng.randrange(1, 6)):
            random_op(rng, eng, deleted)
    settle()
    return eng, records, calls


def record_session(deployment: Any, session_id: str, seed: int) -> tuple[Session, Calls]:
    """A random session recorded through ``deployment``, with another session's stream
    interleaved in the log."""
    rng = random.Random(seed)
    calls = providers()
    other = Session(deployment, f"{session_id}-other", session_tree(),
                    providers=calls.providers, seed={"freeNodes": [{"_id": "x", "v": 1}]})
    s = Session(deployment, session_id, session_tree(), providers=calls.providers,
                seed={"freeNodes": [{"_id": o, "v": 2} for o in OBJECTS],
                      "nodes": [{"_id": n, "link": True} for n in NODES]})
    deleted: set[str] = set()
    for _ in range(5):
        s.settle()
        other.settle()
        for _ in range(4):
            random_op(rng, s.engine, deleted)
    s.settle()
    return s, calls


def state(eng: Engine) -> dict[str, Any]:
    """What a replay must reproduce, read through the public API."""
    kept = eng.revisions()
    keys = sorted({k for f in eng.facts().values() for k in f})
    return {
        "digest": eng.digest(), "cast": eng.cast_digest(), "facts": eng.facts(),
        "cast_state": eng.cast_state(), "tree": eng.export_tree(), "links": eng.node_links(),
        "ids": eng.object_ids(), "revision": eng.revision, "revisions": kept,
        "snapshots": {r: eng.snapshot(r) for r in kept},
        "diff": eng.diff_revisions(kept[0], kept[-1]) if kept else None,
        "select": {k: eng.select([k]) for k in keys},  # the key index, in its order
    }
