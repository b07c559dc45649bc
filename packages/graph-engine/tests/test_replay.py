"""Event sourcing: records are plain JSON, and replay rebuilds state without providers."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from cladelog.graph_engine import Engine, ProviderCall, ReplayError
from ge_helpers import Calls, concept, facts, free, make, tree

Records = list[tuple[str, dict[str, Any]]]


def _session() -> tuple[Engine, Records, Calls]:
    calls = Calls()

    async def slow(call: ProviderCall) -> Any:
        await asyncio.sleep(0)
        return {"$$_id": call.object_id, "A": True, "a": call.facts["v"] * 2}

    calls.add("P::a", slow)
    calls.emit("P::clean", cleaned={"__push": 1})
    calls.add("P::kid", lambda c: [{"$$_id": c.object_id, "K": True},
                                   {"_id": "child", "Node": True, "parent": c.object_id}])
    calls.add("P::bad", lambda c: {}["missing"])
    t = tree(
        concept("A", require=["v"], ensure=["$v > 0"], provider="P::a", cleaner="P::clean",
                children=[concept("B", defaultValue="b")]),
        concept("K", require=["kid"], provider="P::kid"),
        concept("Bad", require=["bad"], provider="P::bad"),
        concept("F", require=["v"], follow=["v"], applyMutations={"$_id": "_parent",
                                                                  "seen": {"__push": 1}}),
    )
    records: Records = []
    seed = {"nodes": [{"_id": "n", "kid": 1}], "freeNodes": [{"_id": "o", "v": 2, "bad": 1}]}
    eng = make(t, seed, calls, records)
    eng.mutate({"$$_id": "o", "v": 0})
    eng.settle()
    eng.mutate({"$$_id": "o", "v": 3})
    eng.settle()
    eng.add_concept("A", {"_id": "C", "require": ["B"]})
    eng.patch_concept("F", {"follow": []})
    eng.settle()
    eng.delete_concept("K")
    eng.uncast("o", "A")
    eng.settle()
    return eng, records, calls


def test_records_are_plain_json() -> None:
    _, records, _ = _session()
    kinds = {k for k, _ in records}
    assert {"tree_loaded", "seeded", "mutation_applied", "cast", "uncast", "provider_error",
            "concept_added", "concept_patched", "concept_deleted", "settled"} <= kinds
    text = json.dumps(records, allow_nan=False)  # raises on anything that is not JSON
    assert json.loads(text) == [[k, d] for k, d in records]


def test_mutation_records_name_their_cause() -> None:
    _, records, _ = _session()
    causes = [d["cause"] for k, d in records if k == "mutation_applied"]
    assert {"kind": "host"} in causes
    provider = [c for c in causes if c.get("provider") == "P::a"]
    assert provider and set(provider[0]) == {"kind", "object", "concept", "apply", "provider"}


def test_replay_calls_no_provider_and_reproduces_state() -> None:
    eng, records, calls = _session()
    assert sum(calls.count.values()) > 0
    before = dict(calls.count)
    replayed = Engine.replay(json.loads(json.dumps(records)))  # through a JSON round trip
    assert calls.count == before  # not one provider call during replay
    assert replayed.provider_calls == {}
    assert replayed.digest() == eng.digest()
    assert replayed.facts() == eng.facts()
    assert replayed.cast_state() == eng.cast_state()
    assert replayed.export_tree() == eng.export_tree()
    assert replayed.node_links() == eng.node_links()
    assert replayed.revision == eng.revision


def test_replayed_engine_continues_live_like_the_original() -> None:
    eng, records, calls = _session()
    replayed = Engine.replay(records, providers=calls.providers)
    for e in (eng, replayed):
        e.mutate({"$$_id": "o", "v": 0})
        e.settle()
    assert replayed.facts() == eng.facts()


def test_replay_rebuilds_open_concepts_on_first_use_without_records() -> None:
    eng, records, calls = _session()
    sunk: Records = []
    replayed = Engine.replay(records, providers=calls.providers,
                             sink=lambda k, d: sunk.append((k, d)))
    # the derived state (open concepts, waits, watches) is rebuilt by the first method that
    # needs it, and recording nothing, as the replay itself would have
    assert replayed.digest() == eng.digest()
    opened = {oid: replayed.open_concepts(oid) for oid in replayed.object_ids()}
    assert sunk == []
    eager = Engine.replay(records)
    eager._catch_up()  # what the replay used to do before returning
    assert opened == {oid: eager.open_concepts(oid) for oid in eager.object_ids()}
    for e in (eng, replayed):  # a live operation first: it rebuilds before applying
        e.mutate({"$$_id": "o", "v": 5})
        e.settle()
    assert replayed.facts() == eng.facts()
    assert replayed.cast_state() == eng.cast_state()


def test_effects_inside_a_mutation_replay_at_their_write() -> None:
    # writing v=0 uncasts A (deleting its flag) *between* the two writes of one mutation;
    # the later A: true must survive on replay too
    records: Records = []
    eng = make(tree(concept("A", require=["v"], ensure=["$v == 1"])), free({"_id": "o", "v": 1}),
               records=records)
    eng.mutate({"$$_id": "o", "v": 0, "A": True})
    eng.settle()
    assert facts(eng, "o") == {"_id": "o", "v": 0, "A": True}
    replayed = Engine.replay(records)
    assert replayed.facts() == eng.facts()
    assert replayed.cast_state() == eng.cast_state()


def test_tampered_records_are_rejected() -> None:
    _, records, _ = _session()
    bad = [(k, dict(d)) for k, d in records]
    for _, data in bad:
        if "items" in data:
            data["items"] = [{**data["items"][0], "set": [["v", 99]]}, *data["items"][1:]]
            break
    with pytest.raises(ReplayError, match="digest differs"):
        Engine.replay(bad)
    with pytest.raises(ReplayError, match="unknown record type"):
        Engine.replay([("nonsense", {})])
    with pytest.raises(ReplayError, match="malformed"):
        Engine.replay([("mutation_applied", {"rev": 1})])
