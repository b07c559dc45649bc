"""Committed logs of each ``graph_engine.records_packed`` version replay to the same state.

Each ``fixtures/logs/packed_v*.log.jsonl`` is a session log exported by an older version of
this package (see ``fixtures/SOURCES.md``). The known values below were computed by that
older code, not by the code under test: a replay now must rebuild the very engine (facts
digest, cast digest, the whole public state) and the very projection states (their digests)
that the writer's own code built.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cladelog.core import Deployment, DeploymentConfig, EventTypeRegistry
from cladelog.core.canonical import canonical_digest
from cladelog.core.store.base import event_from_json
from cladelog.graph_engine import replay_session, session_records
from cladelog.graph_engine.engine import ReplayPort
from cladelog.graph_engine.events import (
    EVENT_TYPES,
    pack_records,
    packed_columns,
    unpack_records,
)
from cladelog.graph_engine.replay import Unfoldable, fold_records
from ge_random import state

LOGS = Path(__file__).parent / "fixtures" / "logs"

#: ``packed_v3.log.jsonl`` and what main's code at commit 13c506d (records_packed schema
#: version 3, columns as JSON text inside a JSON string, the compiled module built) computed
#: from it: ``ge_random.record_session(dep, "v3", 11)`` with ``pack_records`` 5 and
#: ``checkpoint_every`` 40, exported with ``RecordedEvent.to_json``; the live engine's facts
#: and cast digests, the canonical digest of its ``ge_random.state``, the canonical digest of
#: ``session_records``, and ``Deployment.replay()``'s projection digests. Fixture data
#: produced by the old code version, not by the code under test.
V3 = {
    "versions": {"graph_engine.records_packed": [3], "graph_engine.checkpoint": [1]},
    "digest": "60e8c8b142eaff4ee83e8f03177654c0541c1856746caa6ae66cbbf2dae50066",
    "cast_digest": "d64b1f5929d8d5ec9e2626be52ea9c5a1718cb192751176322f620e8c39de407",
    "state_digest": "e1444b37b5eb8d8b9f7a3138543b52fd06d1e5abdf25fe42d861c81603a917ff",
    "records_digest": "b5aea0337daae3bf86541984d59bf30b7ed22488c8313b94d6932bbfa5e89927",
    "records": 131,
    "projections": {
        "core.plugins": "400b2145d5a21db81ac5427cb5f272cf3f770779efa54295e53f84308d60e981",
        "core.tlog": "fedda6d1e1912776047a7bc27547801314407ff7b52a2e526a1c7cff86256a46",
        "graph_engine.sessions":
            "1388e5cc0591b6800df5260da75a1d726c8fbe8460afaac2d025cb0f53935db6",
        "graph_engine.libraries":
            "f22319a696ebb5b444e8e868cf78624c21d6c9449866e36363abeb3dced4d0c7",
    },
}


#: ``packed_v4.log.jsonl``: the same session (id ``v3``, ``record_session`` seed 11, the same
#: settings) written by the version 4 writer (issue 22: columns as JSON values). Its known
#: values are V3's, computed by the old code: the records, the engine and the projections
#: must not depend on the format they were stored in.
V4 = {**V3, "versions": {"graph_engine.records_packed": [4], "graph_engine.checkpoint": [1]}}

#: ``packed_v5.log.jsonl``: the same session again, written by the version 5 writer (issue
#: 22: a per-pack table of mutation shapes). Its known values are V3's, computed by the old
#: code, as for V4.
V5 = {**V3, "versions": {"graph_engine.records_packed": [5], "graph_engine.checkpoint": [1]}}


def _deployment(root: Path) -> Any:
    settings = {"graph-engine": {"pack_records": 5, "checkpoint_every": 40}}
    cfg = DeploymentConfig.from_dict({"store": "log.sqlite3", "actor": "fixture",
                                      "plugins": ["graph-engine"], "settings": settings},
                                     path=root / "cladelog.toml")
    return Deployment(cfg, create=True)


@pytest.mark.parametrize(("name", "expected"),
                         [("packed_v3", V3), ("packed_v4", V4), ("packed_v5", V5)])
def test_a_committed_log_replays_to_the_digests_of_its_writer(
        tmp_path: Path, name: str, expected: dict[str, Any]) -> None:
    lines = (LOGS / f"{name}.log.jsonl").read_text(encoding="utf-8").splitlines()
    with _deployment(tmp_path) as dep:
        dep.import_events(event_from_json(json.loads(line)) for line in lines)
        versions: dict[str, set[int]] = {}
        for e in dep.store.read(stream="graph.v3"):
            versions.setdefault(e.type, set()).add(e.schema_version)
        assert {k: sorted(v) for k, v in versions.items()} == expected["versions"]
        for from_checkpoint in (False, True):
            eng = replay_session(dep, "v3", from_checkpoint=from_checkpoint)
            assert eng.digest() == expected["digest"]
            assert eng.cast_digest() == expected["cast_digest"]
            assert canonical_digest(json.loads(json.dumps(state(eng)))) == \
                expected["state_digest"]
        records = session_records(dep, "v3")
        assert len(records) == expected["records"]
        assert canonical_digest([list(r) for r in records]) == expected["records_digest"]
        result = dep.replay()
        assert {p.name: p.digest for p in result.projections} == expected["projections"]


PACKED = "graph_engine.records_packed"


@pytest.mark.parametrize("name", ["packed_v3", "packed_v4"])
def test_an_older_event_upcasts_to_what_the_writer_writes_of_its_records(name: str) -> None:
    # each packed event of the committed logs, brought to version 5, is exactly the data the
    # version 5 writer makes of the records it holds (which the digests above pin)
    registry = EventTypeRegistry(EVENT_TYPES)
    seen = 0
    for line in (LOGS / f"{name}.log.jsonl").read_text(encoding="utf-8").splitlines():
        e = event_from_json(json.loads(line))
        if e.type == PACKED:
            new = registry.upcast(PACKED, e.schema_version, e.data)
            assert new == pack_records(unpack_records(new))
            seen += 1
    assert seen > 20


def _v4_mutation_data() -> dict[str, Any]:
    # version 4 columns by hand: mutation (2 writes), provider error, cast at write 2,
    # provider error, then a whole record; the audit holds the mutation's target and cause
    error = {"object": "o", "concept": "A", "provider": "P::a", "role": "provider",
             "apply": "a1", "message": "boom"}
    return {"count": 5, "errors": 2, "settles": 0, "settled": None, "status": None,
            "columns": {"order": "mocoo", "rev": [7], "id": ["o"], "n": [2],
                        "k": ["v", "w"], "v": [1, {"__push": 2}], "cast": ["A"],
                        "write": [2],
                        "other": [["provider_error", error], ["provider_error", error],
                                  ["rolled_back", {"to": 1, "previous": 7}]]},
            "audit": json.dumps({"target": ["o"], "cause": [{"kind": "host"}]},
                                separators=(",", ":"))}


def test_a_version_4_event_regroups_a_record_among_casts_as_a_null_of_its_shape() -> None:
    registry = EventTypeRegistry(EVENT_TYPES)
    old = _v4_mutation_data()
    error = old["columns"]["other"][0][1]
    new = registry.upcast(PACKED, 4, old)
    # the provider error before the cast is in the shape's follow; the one after the last
    # cast stays a letter of its own, as the writer lays them out
    assert new["columns"] == {"order": "moo", "shape": [[["v", "w"], [None, ["A", 2]]]],
                              "s": [0], "rev": [7], "id": ["o"], "v": [1, {"__push": 2}],
                              "other": old["columns"]["other"]}
    assert unpack_records(new) == [
        ("mutation_applied", {"rev": 7, "target": "o", "cause": {"kind": "host"},
                              "items": [{"id": "o", "create": None,
                                         "set": [["v", 1], ["w", {"__push": 2}]]}]}),
        ("provider_error", error),
        ("cast", {"object": "o", "concept": "A", "at": [7, 2]}),
        ("provider_error", error),
        ("rolled_back", {"to": 1, "previous": 7})]
    assert new == pack_records(unpack_records(new))


def test_a_version_4_cast_after_a_whole_record_is_left_to_the_general_path() -> None:
    # never written by a packer: a settled between a columnar mutation and its cast. The
    # upcast keeps the records (the settled a null of the shape); the fold refuses them
    registry = EventTypeRegistry(EVENT_TYPES)
    old = _v4_mutation_data()
    settled = {"revision": 7, "passes": 1, "applies": 1, "created": 0, "capped": None,
               "digest": "d", "castDigest": "c"}
    old["columns"]["other"][0] = ["settled", settled]
    new = registry.upcast(PACKED, 4, old)
    assert new["columns"]["shape"] == [[["v", "w"], [None, ["A", 2]]]]
    assert [k for k, _ in unpack_records(new)] == [
        "mutation_applied", "settled", "cast", "provider_error", "rolled_back"]
    boot = [("tree_loaded", {"tree": {"childConcepts": {"A": {"_id": "A", "_name": "A",
                                                             "require": ["v"]}}},
                             "config": {}}),
            ("seeded", {"freeNodes": [{"_id": "o"}], "nodes": [], "segments": []})]
    with pytest.raises(Unfoldable, match="not a provider error"):
        fold_records([boot, packed_columns(new)], ReplayPort)


@pytest.mark.parametrize(("change", "message"), [
    (lambda c: c.update(s=[1]), "each s must be the number of a shape"),
    (lambda c: c.update(shape=[[["v", "w"], [None, ["A", 3]]]]), "one of its writes"),
    (lambda c: c.update(shape=[[["v", 1], []]]), "keys must be strings"),
    (lambda c: c.update(v=[1]), "lengths do not agree"),
    (lambda c: c.update(order="mo"), "lengths do not agree"),
    (lambda c: c.update(shape=[[["v", "w"], [["A", 2]]]]), "lengths do not agree"),
])
def test_inconsistent_version_5_columns_are_refused(change: Any, message: str) -> None:
    registry = EventTypeRegistry(EVENT_TYPES)
    new = registry.upcast(PACKED, 4, _v4_mutation_data())
    packed_columns(new)
    change(new["columns"])
    with pytest.raises(ValueError, match=message):
        packed_columns(new)
